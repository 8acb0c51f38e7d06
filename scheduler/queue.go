package scheduler

import "cmp"

// opQueue holds one job's units of one operation: the count of those
// pending and, in index order, those ready to place (pending with every
// dependency accepted). Dispatch takes units from the head of the ready
// heap instead of scanning the job, so placing a unit costs O(log n).
type opQueue struct {
	op      string
	pending int          // units of op in unitPending (ready or blocked)
	held    int          // of those, units held (Unit.Held) until released
	ready   minHeap[int] // indexes of placeable units
	share   *opShare     // static policies: the plan, once made
	ws      []*worker    // capable workers, valid while wsGen == Core.gen
	wsGen   int          // Core.gen when ws was computed; 0 means never
	tried   int          // Core.pass in which placing from this queue failed
}

// minHeap is a binary min-heap over a slice. A sorted slice is a valid
// heap, so a queue can be built without heapifying.
type minHeap[T cmp.Ordered] []T

func (h minHeap[T]) len() int { return len(h) }

// min returns the least element; the heap must not be empty.
func (h minHeap[T]) min() T { return h[0] }

func (h *minHeap[T]) push(x T) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

// pop removes and returns the least element; the heap must not be empty.
func (h *minHeap[T]) pop() T {
	s := *h
	x, n := s[0], len(s)-1
	s[0] = s[n]
	*h = s[:n]
	s.down(0)
	return x
}

func (h minHeap[T]) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l] < h[m] {
			m = l
		}
		if r := l + 1; r < len(h) && h[r] < h[m] {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// median keeps a running median of durations in two heaps: lo holds the
// smaller half negated (a max-heap), hi the larger half, with len(hi) ==
// len(lo) or len(lo)+1. Its value is element n/2 of the sorted samples.
type median struct {
	lo, hi minHeap[int64]
}

func (m *median) add(x int64) {
	if m.hi.len() > 0 && x < m.hi.min() {
		m.lo.push(-x)
	} else {
		m.hi.push(x)
	}
	switch {
	case m.lo.len() > m.hi.len():
		m.hi.push(-m.lo.pop())
	case m.hi.len() > m.lo.len()+1:
		m.lo.push(-m.hi.pop())
	}
}

// value returns the median; false with no samples.
func (m *median) value() (int64, bool) {
	if m.hi.len() == 0 {
		return 0, false
	}
	return m.hi.min(), true
}

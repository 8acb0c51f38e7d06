package scheduler

import (
	"cmp"
	"math/bits"
)

// opQueue holds one job's units of one operation: the count of those
// pending and, in index order, those ready to place (pending with every
// dependency accepted). Dispatch takes units from the head of the ready
// set instead of scanning the job, so placing a unit costs O(log n).
type opQueue struct {
	op      string
	pending int      // units of op in unitPending (ready or blocked)
	held    int      // of those, units held (Unit.Held) until released
	ready   readySet // indexes of placeable units
	share   *opShare // static policies: the plan, once made
	x       *opIndex // the workers that can run op, while the job is live
	tried   int      // Core.pass in which placing from this queue failed
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

// median keeps a running median of durations: exactly over the first
// maxExact samples, in two heaps (lo holds the smaller half negated, a
// max-heap; hi the larger half, with len(hi) == len(lo) or len(lo)+1), its
// value element n/2 of the sorted samples; after that in a histogram whose
// buckets are 1/64 of their value wide, so that a job of millions of units
// does not keep a sample of each.
type median struct {
	lo, hi minHeap[int64]
	hist   []int64 // counts per bucket (bucketOf), once past maxExact samples
	n      int64
}

// maxExact is how many samples a median keeps before it counts them in
// buckets instead.
const maxExact = 1 << 15

func (m *median) add(x int64) {
	m.n++
	if m.hist != nil {
		m.hist[bucketOf(x)]++
		return
	}
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
	if m.n == maxExact {
		m.hist = make([]int64, numBuckets)
		for _, x := range m.lo {
			m.hist[bucketOf(-x)]++
		}
		for _, x := range m.hi {
			m.hist[bucketOf(x)]++
		}
		m.lo, m.hi = nil, nil
	}
}

// value returns the median; false with no samples.
func (m *median) value() (int64, bool) {
	if m.hist != nil {
		seen := int64(0)
		for b, k := range m.hist {
			if seen += k; seen > m.n/2 {
				return bucketValue(b), true
			}
		}
	}
	if m.hi.len() == 0 {
		return 0, false
	}
	return m.hi.min(), true
}

// Buckets: values below 128 have one each; above, a bucket is a power of
// two split in 64.
const numBuckets = 128 + 57*64

func bucketOf(x int64) int {
	if x < 128 {
		return int(max(x, 0))
	}
	s := bits.Len64(uint64(x)) - 7
	return 128 + (s-1)*64 + int(x>>s) - 64
}

// bucketValue is the middle of bucket b's values.
func bucketValue(b int) int64 {
	if b < 128 {
		return int64(b)
	}
	s, m := (b-128)/64+1, int64((b-128)%64+64)
	return m<<s + 1<<(s-1)
}

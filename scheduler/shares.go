package scheduler

import (
	"math"
	"slices"
)

// opShare is a static policy's plan for the units of one operation in one
// job: how many units each worker may still be sent (left), plus a common
// pool. The plan is made once, over the capable workers that are up when
// the first unit of the operation is placed.
//
// Units come back to the pool when they are requeued (their worker went
// down, or came up again), and a worker that goes down gives its unsent
// share to the pool too; any capable worker drains the pool once its own
// share is used up. A worker that joins after the plan gets no share, but
// may drain the pool. So shares + pool always cover the pending units and a
// job never strands work on a dead worker.
type opShare struct {
	left  map[string]int
	names []string // the keys of left, sorted, and names released since the last replan
	pool  int
	// The holders with some share left, ranked for pick (index.go).
	members map[string]*shareMember
	ranks   []*ranking
}

// planShares divides q's pending units among ws by weights.
func (q *opQueue) planShares(ws []*worker, weights []float64) *opShare {
	s := &opShare{left: map[string]int{}}
	n := apportion(q.pending, weights)
	for i, w := range ws {
		s.left[w.name] = n[i]
		s.names = append(s.names, w.name)
	}
	q.share = s
	return s
}

// take consumes one unit of w's share, or of the pool; false if neither.
func (s *opShare) take(w string) bool {
	if n := s.left[w]; n > 0 {
		s.left[w] = n - 1
		if n == 1 {
			s.changed(w)
		}
		return true
	}
	if s.pool > 0 {
		s.pool--
		return true
	}
	return false
}

// allows reports whether take(w) would succeed.
func (s *opShare) allows(w string) bool { return s.left[w] > 0 || s.pool > 0 }

// release moves w's unsent share into the pool. (Its name leaves names
// at the next replan.)
func (s *opShare) release(w string) {
	s.pool += s.left[w]
	delete(s.left, w)
}

// replanSpeed re-divides the unsent shares of jobs whose policy follows
// the speed estimates, after an estimate changed. A job whose shares have
// h holders is re-planned once every h/16 changes (every change below 32
// holders): a plan costs O(h log h), so each change costs O(log h) however
// many workers there are.
func (c *Core) replanSpeed() {
	for _, j := range c.replanning {
		if j.replanDebt++; j.replanDebt >= max(1, j.holders()/16) {
			j.replanDebt = 0
			j.replan(c)
		}
	}
}

// holders counts the holders of j's shares, over its operations.
func (j *job) holders() int {
	n := 0
	for _, q := range j.ops {
		if q.share != nil {
			n += len(q.share.left)
		}
	}
	return n
}

// replan divides the unsent shares again among their holders by the
// policy's weights; the pool is left alone. A new plan that moves no share
// by more than one unit is ignored, so rounding does not flap on noise.
func (j *job) replan(c *Core) {
	for _, q := range j.ops {
		s := q.share
		if s == nil {
			continue
		}
		s.names = slices.DeleteFunc(s.names, func(n string) bool { _, ok := s.left[n]; return !ok })
		names := s.names
		ws := c.scratch[:0]
		total := 0
		c.work.visits += uint64(len(names))
		for _, n := range names {
			ws = append(ws, c.workers[n])
			total += s.left[n]
		}
		c.scratch = ws
		n := apportion(total, j.policy.weights(c, ws))
		if !movesEnough(s.left, names, n) {
			continue
		}
		for i, name := range names {
			old := s.left[name]
			s.left[name] = n[i]
			if (old > 0) != (n[i] > 0) {
				s.changed(name)
			}
		}
	}
}

// apportion splits total into whole parts proportional to weights: each
// gets the floor of its exact part, and what rounding leaves goes one by
// one to the largest remainders, earlier indexes first on ties. With no
// positive weight it splits equally.
func apportion(total int, weights []float64) []int {
	out := make([]int, len(weights))
	sum := 0.0
	for _, w := range weights {
		sum += max(w, 0)
	}
	if len(weights) == 0 {
		return out
	}
	exact := make([]float64, len(weights))
	for i, w := range weights {
		if sum > 0 {
			exact[i] = float64(total) * max(w, 0) / sum
		} else {
			exact[i] = float64(total) / float64(len(weights))
		}
	}
	given := 0
	for i, e := range exact {
		out[i] = int(math.Floor(e + 1e-9))
		given += out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	rem := func(i int) float64 { return exact[i] - float64(out[i]) }
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case rem(a) > rem(b)+1e-9:
			return -1
		case rem(b) > rem(a)+1e-9:
			return 1
		}
		return 0
	})
	for k := 0; given < total; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

// movesEnough reports whether plan n differs from left by 2 or more units
// for some worker.
func movesEnough(left map[string]int, names []string, n []int) bool {
	for i, name := range names {
		if d := n[i] - left[name]; d >= 2 || d <= -2 {
			return true
		}
	}
	return false
}

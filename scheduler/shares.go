package scheduler

import (
	"math"
	"slices"
	"sort"
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
	left map[string]int
	pool int
}

// planShares divides the job's pending units of op among ws by weights.
func (j *job) planShares(op string, ws []*worker, weights []float64) *opShare {
	total := 0
	for _, u := range j.units {
		if u.Op == op && u.state == unitPending {
			total++
		}
	}
	s := &opShare{left: map[string]int{}}
	n := apportion(total, weights)
	for i, w := range ws {
		s.left[w.name] = n[i]
	}
	j.shares[op] = s
	return s
}

// take consumes one unit of w's share, or of the pool; false if neither.
func (s *opShare) take(w string) bool {
	if s.left[w] > 0 {
		s.left[w]--
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

// release moves w's unsent share into the pool.
func (s *opShare) release(w string) {
	s.pool += s.left[w]
	delete(s.left, w)
}

// replan divides the unsent shares again among their holders by the
// policy's weights; the pool is left alone. A new plan that moves no share
// by more than one unit is ignored, so rounding does not flap on noise.
func (j *job) replan(c *Core) {
	for _, s := range j.shares {
		names := sortedKeys(s.left)
		ws := make([]*worker, len(names))
		total := 0
		for i, n := range names {
			ws[i] = c.workers[n]
			total += s.left[n]
		}
		n := apportion(total, j.policy.weights(c, ws))
		if !movesEnough(s.left, names, n) {
			continue
		}
		for i, name := range names {
			s.left[name] = n[i]
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
	sort.SliceStable(order, func(a, b int) bool {
		return exact[order[a]]-float64(out[order[a]]) > exact[order[b]]-float64(out[order[b]])+1e-9
	})
	for k := 0; given < total; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

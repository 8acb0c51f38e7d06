package scheduler

import (
	"fmt"
	"slices"
	"time"
)

type unitState uint8

const (
	unitPending unitState = iota // waiting to be sent (maybe for its deps)
	unitRunning                  // at least one copy in flight
	unitDone                     // result accepted
	unitFailed                   // failed result accepted, or a dependency failed
)

// attempt is one copy of a unit in flight on a worker stream.
type attempt struct {
	worker string
	stream int
	n      int  // Attempt number
	spec   bool // speculative duplicate
	sent   time.Time
	ahead  int // units already in flight on the stream when sent
}

type unit struct {
	Unit
	state      unitState
	blockers   int   // unfinished dependencies, plus one while held
	held       bool  // waiting for a UnitsReleased
	dependents []int // units that list this one in Deps
	attempts   int   // last attempt number issued
	copies     []attempt
	duplicated bool // a speculative copy was issued
	oq         int  // index of the unit's operation in job.ops
}

type job struct {
	name      string
	seq       int // arrival order
	policy    policy
	speculate bool
	units     []unit
	final     int // units done or failed
	failed    int
	pending   int // units in unitPending
	copies    int // copies in flight, over all units
	cancelled bool
	finished  bool
	ops       []*opQueue // per operation, by first unit index
	opIndex   map[string]int
	opsGen    int    // bumped when an operation's pending count becomes or stops being 0
	waiting   string // Progress.Waiting, valid for (waitGen, waitOps)
	waitGen   int
	waitOps   int
	computes  median // Compute of accepted successful results
	nets      median // their time on the network: sent to result, less Queued and Compute
}

// newJob validates ev and builds the job; on error nothing is kept.
func newJob(ev JobAdded, seq int) (*job, error) {
	p, ok := policies[ev.Policy]
	if !ok {
		return nil, fmt.Errorf("%w %q for job %q (want one of %v)", ErrUnknownPolicy, ev.Policy, ev.Job, PolicyNames)
	}
	n := len(ev.Units)
	if ev.Job == "" || n == 0 {
		return nil, fmt.Errorf("%w: job %q has no name or no units", ErrBadUnit, ev.Job)
	}
	j := &job{name: ev.Job, seq: seq, policy: p, speculate: ev.Speculate,
		units: make([]unit, n), pending: n, opIndex: map[string]int{}}
	seen := make([]bool, n)
	for _, u := range ev.Units {
		if err := checkUnit(u, n, seen); err != nil {
			return nil, fmt.Errorf("%w in job %q", err, ev.Job)
		}
		seen[u.Index] = true
		j.units[u.Index] = unit{Unit: Unit{Index: u.Index, Op: u.Op, Deps: slices.Clone(u.Deps), Size: max(u.Size, 0)}, blockers: len(u.Deps)}
		if u.Held && !u.Done {
			j.units[u.Index].held = true
			j.units[u.Index].blockers++
		}
	}
	for i := range j.units {
		for _, d := range j.units[i].Deps {
			j.units[d].dependents = append(j.units[d].dependents, i)
		}
	}
	if hasCycle(j.units) {
		return nil, fmt.Errorf("%w in job %q", ErrDepCycle, ev.Job)
	}
	for _, u := range ev.Units {
		if u.Done {
			j.restore(u.Index)
		}
	}
	j.queue()
	return j, nil
}

// release makes held unit i placeable once its dependencies are done.
func (j *job) release(i int) {
	u := &j.units[i]
	if !u.held {
		return
	}
	u.held = false
	u.blockers--
	j.ops[u.oq].held--
	if u.blockers == 0 && u.state == unitPending {
		j.ops[u.oq].ready.push(i)
	}
}

// restore marks unit i, whose result was accepted before a restart, as
// done before the queues are built.
func (j *job) restore(i int) {
	u := &j.units[i]
	u.state = unitDone
	j.final++
	j.pending--
	for _, d := range u.dependents {
		j.units[d].blockers--
	}
	j.finished = j.final == len(j.units)
}

// queue builds the per-operation queues of the pending units (all but
// those restored as done).
func (j *job) queue() {
	for i := range j.units {
		u := &j.units[i]
		if u.state != unitPending {
			continue
		}
		k, ok := j.opIndex[u.Op]
		if !ok {
			k = len(j.ops)
			j.opIndex[u.Op] = k
			j.ops = append(j.ops, &opQueue{op: u.Op})
		}
		u.oq = k
		q := j.ops[k]
		q.pending++
		if u.held {
			q.held++
		}
		if u.blockers == 0 {
			q.ready = append(q.ready, i) // ascending, so still a heap
		}
	}
}

// setPending moves unit i into unitPending (on, with st unitPending) or
// out of it into st, keeping the job's and the operation's pending counts;
// a unit entering it is queued if it is placeable.
func (j *job) setPending(i int, on bool, st unitState) {
	u := &j.units[i]
	q := j.ops[u.oq]
	d := -1
	if on {
		d = 1
	}
	j.pending += d
	q.pending += d
	if q.pending == 0 || (on && q.pending == 1) {
		j.opsGen++
	}
	u.state = st
	if on && u.blockers == 0 {
		q.ready.push(i)
	}
}

func checkUnit(u Unit, n int, seen []bool) error {
	if u.Index < 0 || u.Index >= n || seen[u.Index] {
		return fmt.Errorf("%w: index %d out of range or repeated (job has %d units)", ErrBadUnit, u.Index, n)
	}
	if u.Op == "" {
		return fmt.Errorf("%w: unit %d has no operation", ErrBadUnit, u.Index)
	}
	for k, d := range u.Deps {
		if d < 0 || d >= n || d == u.Index || slices.Contains(u.Deps[:k], d) {
			return fmt.Errorf("%w: unit %d has bad dependency %d", ErrBadUnit, u.Index, d)
		}
	}
	return nil
}

// hasCycle runs Kahn's algorithm over the dependency graph.
func hasCycle(us []unit) bool {
	indeg := make([]int, len(us))
	var ready []int
	for i, u := range us {
		if indeg[i] = len(u.Deps); indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	seen := 0
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		seen++
		for _, d := range us[i].dependents {
			if indeg[d]--; indeg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	return seen != len(us)
}

// active reports whether the job still wants units placed.
func (j *job) active() bool { return !j.cancelled && !j.finished }

// finish records unit i as final and releases its dependents, queueing
// those left with no unfinished dependency; dependents of a failed unit
// fail too (they cannot get their input). It returns the indexes failed by
// cascade.
func (j *job) finish(i int, failed bool) (cascaded []int) {
	u := &j.units[i]
	st := unitDone
	if failed {
		st = unitFailed
		j.failed++
	}
	if u.state == unitPending {
		j.setPending(i, false, st)
	}
	u.state = st
	j.final++
	for _, d := range u.dependents {
		du := &j.units[d]
		du.blockers--
		switch {
		case failed && du.state == unitPending:
			cascaded = append(cascaded, d)
			cascaded = append(cascaded, j.finish(d, true)...)
		case du.blockers == 0 && du.state == unitPending:
			j.ops[du.oq].ready.push(d)
		}
	}
	if j.final == len(j.units) {
		j.finished = true
	}
	return cascaded
}

// stragglerAfter is how long a copy of j's is in flight before it counts
// as a straggler: SpeculateAfter times the median compute time, plus twice
// the median time on the network (see speculate). false with no results.
func (j *job) stragglerAfter(speculateAfter float64) (time.Duration, bool) {
	c, ok := j.computes.value()
	if !ok {
		return 0, false
	}
	n, _ := j.nets.value()
	return time.Duration(speculateAfter*float64(c)) + 2*time.Duration(n), true
}

// dropCopy removes the copy of the unit that result f is for and reports
// whether there was one.
func (u *unit) dropCopy(f UnitFinished) (attempt, bool) {
	for k, a := range u.copies {
		if a.worker == f.Worker && a.stream == f.Stream && (f.Attempt == 0 || f.Attempt == a.n) {
			u.copies = slices.Delete(u.copies, k, k+1)
			return a, true
		}
	}
	return attempt{}, false
}

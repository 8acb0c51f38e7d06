package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

type job struct {
	name      string
	seq       int // arrival order
	policy    policy
	speculate bool
	n         int         // units
	states    []unitState // per unit (units.go)
	opOf      []int32     // per unit, its operation's index in ops; nil: the job has one
	sizes     []int64     // per unit, its input size; nil: every unit's is sizeAll
	sizeAll   int64
	blocked   []int32 // per unit, unfinished dependencies plus one while held; nil: none ever
	deps      csr     // each unit's Deps
	dependent csr     // the units that list each unit in their Deps
	runs      map[int32]*run
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
	computes  median  // Compute of accepted successful results
	nets      median  // their time on the network: sent to result, less Queued and Compute
	flight    []flown // speculating jobs: copies sent (speculation.go)
	// replanDebt counts estimate changes since the speed policy last
	// re-planned the job's shares (shares.go).
	replanDebt int
	placeable  bool // in Core.placeable
}

// newJob validates ev and builds the job; on error nothing is kept.
func newJob(ev JobAdded, seq int) (*job, error) {
	p, ok := policies[ev.Policy]
	if !ok {
		return nil, fmt.Errorf("%w %q for job %q (want one of %v)", ErrUnknownPolicy, ev.Policy, ev.Job, PolicyNames)
	}
	switch {
	case ev.Job == "" || (len(ev.Units) == 0 && ev.Repeat.Count == 0):
		return nil, fmt.Errorf("%w: job %q has no name or no units", ErrBadUnit, ev.Job)
	case len(ev.Units) > 0 && ev.Repeat.Count != 0:
		return nil, fmt.Errorf("%w: job %q has both units and a repeat count", ErrBadUnit, ev.Job)
	}
	j := &job{name: ev.Job, seq: seq, policy: p, speculate: ev.Speculate, opIndex: map[string]int{}, runs: map[int32]*run{}}
	var err error
	if ev.Repeat.Count != 0 {
		err = j.repeat(ev.Repeat)
	} else {
		err = j.list(ev.Units)
	}
	if err != nil {
		return nil, fmt.Errorf("%w in job %q", err, ev.Job)
	}
	return j, nil
}

// repeat builds a job of identical independent units.
func (j *job) repeat(r Repeat) error {
	if r.Count < 1 || r.Count > maxUnits || r.Op == "" {
		return fmt.Errorf("%w: %d units of operation %q (want 1 to %d, and an operation)", ErrBadUnit, r.Count, r.Op, maxUnits)
	}
	last := 0
	for _, s := range r.Done {
		if s.From < last || s.To <= s.From || s.To > r.Count {
			return fmt.Errorf("%w: done span [%d, %d) out of order, empty or out of range (job has %d units)", ErrBadUnit, s.From, s.To, r.Count)
		}
		last = s.To
	}
	j.n, j.sizeAll = r.Count, max(r.Size, 0)
	j.states, j.pending = make([]unitState, j.n), j.n
	q := j.addOp(r.Op)
	q.pending = j.n
	from := 0
	for _, s := range r.Done {
		for i := s.From; i < s.To; i++ {
			j.restore(i)
		}
		q.ready.appendSpan(from, s.From)
		from = s.To
	}
	q.ready.appendSpan(from, j.n)
	q.pending -= j.n - j.pending
	return nil
}

// list builds a job from its units listed one by one.
func (j *job) list(units []Unit) error {
	n := len(units)
	if n > maxUnits {
		return fmt.Errorf("%w: %d units (at most %d)", ErrBadUnit, n, maxUnits)
	}
	j.n, j.states, j.pending = n, make([]unitState, n), n
	seen := newBitset(n)
	deps, held := 0, false
	for _, u := range units {
		if err := checkUnit(u, n, seen); err != nil {
			return err
		}
		seen.set(u.Index)
		deps += len(u.Deps)
		held = held || (u.Held && !u.Done)
	}
	j.columns(units)
	if deps > 0 {
		j.link(units, deps)
		if j.hasCycle() {
			return ErrDepCycle
		}
	}
	if deps > 0 || held {
		j.blocked = make([]int32, n)
		for _, u := range units {
			j.blocked[u.Index] = int32(len(u.Deps))
			if u.Held && !u.Done {
				j.states[u.Index] |= heldBit
				j.blocked[u.Index]++
			}
		}
	}
	for _, u := range units {
		if u.Done {
			j.restore(u.Index)
		}
	}
	j.queue()
	return nil
}

// columns records the units' operations (ordered by their first unit)
// and sizes, as columns only where the units differ.
func (j *job) columns(units []Unit) {
	first := map[string]int{}
	for _, u := range units {
		if k, ok := first[u.Op]; !ok || u.Index < k {
			first[u.Op] = u.Index
		}
	}
	ops := make([]string, 0, len(first))
	for op := range first {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int { return cmp.Compare(first[a], first[b]) })
	for _, op := range ops {
		j.addOp(op)
	}
	if len(ops) > 1 {
		j.opOf = make([]int32, j.n)
		for _, u := range units {
			j.opOf[u.Index] = int32(j.opIndex[u.Op])
		}
	}
	j.sizeAll = max(units[0].Size, 0)
	for _, u := range units {
		if max(u.Size, 0) != j.sizeAll {
			j.sizes = make([]int64, j.n)
			for _, v := range units {
				j.sizes[v.Index] = max(v.Size, 0)
			}
			return
		}
	}
}

func (j *job) addOp(op string) *opQueue {
	q := &opQueue{op: op}
	j.opIndex[op] = len(j.ops)
	j.ops = append(j.ops, q)
	return q
}

// link records each unit's dependencies and dependents (deps of them in
// all).
func (j *job) link(units []Unit, deps int) {
	j.deps = csr{off: make([]int32, j.n+1), list: make([]int32, deps)}
	j.dependent = csr{off: make([]int32, j.n+1), list: make([]int32, deps)}
	for _, u := range units {
		j.deps.off[u.Index+1] = int32(len(u.Deps))
		for _, d := range u.Deps {
			j.dependent.off[d+1]++
		}
	}
	for i := range j.n {
		j.deps.off[i+1] += j.deps.off[i]
		j.dependent.off[i+1] += j.dependent.off[i]
	}
	for _, u := range units {
		for k, d := range u.Deps {
			j.deps.list[int(j.deps.off[u.Index])+k] = int32(d)
		}
	}
	fill := slices.Clone(j.dependent.off[:j.n])
	for i := range j.n { // in index order, as each unit's dependents are
		for _, d := range j.deps.of(i) {
			j.dependent.list[fill[d]] = int32(i)
			fill[d]++
		}
	}
}

// release makes held unit i placeable once its dependencies are done.
func (j *job) release(i int) {
	if !j.held(i) {
		return
	}
	j.states[i] &^= heldBit
	j.blocked[i]--
	q := j.queueOf(i)
	q.held--
	if q.x != nil {
		q.x.demand++
	}
	if j.blocked[i] == 0 && j.state(i) == unitPending {
		q.ready.push(i)
	}
}

// restore marks unit i, whose result was accepted before a restart, as
// done before the queues are built.
func (j *job) restore(i int) {
	j.setState(i, unitDone)
	j.final++
	j.pending--
	for _, d := range j.dependent.of(i) {
		j.blocked[d]--
	}
	j.finished = j.final == j.n
}

// queue builds the per-operation queues of the pending units (all but
// those restored as done).
func (j *job) queue() {
	for i := range j.n {
		if j.state(i) != unitPending {
			continue
		}
		q := j.queueOf(i)
		q.pending++
		if j.held(i) {
			q.held++
		}
		if j.blockers(i) == 0 {
			q.ready.appendInOrder(i)
		}
	}
}

// setPending moves unit i into unitPending (on, with st unitPending) or
// out of it into st, keeping the job's and the operation's pending counts;
// a unit entering it is queued if it is placeable.
func (j *job) setPending(i int, on bool, st unitState) {
	q := j.queueOf(i)
	d := -1
	if on {
		d = 1
	}
	j.pending += d
	q.pending += d
	if q.x != nil {
		q.x.demand += d
	}
	if q.pending == 0 || (on && q.pending == 1) {
		j.opsGen++
	}
	j.setState(i, st)
	if on && j.blockers(i) == 0 {
		q.ready.push(i)
	}
}

func checkUnit(u Unit, n int, seen bitset) error {
	if u.Index < 0 || u.Index >= n || seen.has(u.Index) {
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
func (j *job) hasCycle() bool {
	indeg := make([]int32, j.n)
	var ready []int32
	for i := range j.n {
		if indeg[i] = int32(len(j.deps.of(i))); indeg[i] == 0 {
			ready = append(ready, int32(i))
		}
	}
	seen := 0
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		seen++
		for _, d := range j.dependent.of(int(i)) {
			if indeg[d]--; indeg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	return seen != j.n
}

// active reports whether the job still wants units placed.
func (j *job) active() bool { return !j.cancelled && !j.finished }

// hasReady reports whether some unit of the job is placeable.
func (j *job) hasReady() bool {
	for _, q := range j.ops {
		if q.ready.len() > 0 {
			return true
		}
	}
	return false
}

// finish records unit i as final and releases its dependents, queueing
// those left with no unfinished dependency; dependents of a failed unit
// fail too (they cannot get their input). It returns the indexes failed by
// cascade.
func (j *job) finish(i int, failed bool) (cascaded []int) {
	st := unitDone
	if failed {
		st = unitFailed
		j.failed++
	}
	if j.state(i) == unitPending {
		j.setPending(i, false, st)
	}
	j.setState(i, st)
	j.final++
	for _, d32 := range j.dependent.of(i) {
		d := int(d32)
		j.blocked[d]--
		switch {
		case failed && j.state(d) == unitPending:
			cascaded = append(cascaded, d)
			cascaded = append(cascaded, j.finish(d, true)...)
		case j.blocked[d] == 0 && j.state(d) == unitPending:
			j.queueOf(d).ready.push(d)
		}
	}
	if j.final == j.n {
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
func (r *run) dropCopy(f UnitFinished) (attempt, bool) {
	for k, a := range r.copies {
		if a.worker.name == f.Worker && a.stream == f.Stream && (f.Attempt == 0 || f.Attempt == a.n) {
			r.copies = slices.Delete(r.copies, k, k+1)
			return a, true
		}
	}
	return attempt{}, false
}

package scheduler

import (
	"fmt"
	"slices"
	"time"
)

// Defaults for the zero Config.
const (
	DefaultWindow         = 2
	DefaultMaxWindow      = 32
	DefaultSpeculateAfter = 1.0
	DefaultByteHorizon    = time.Second
)

// Core is the scheduling state machine. It is not safe for concurrent use:
// one goroutine owns it and calls every method. It reads no clock, does no
// I/O and iterates no map without sorting, so the same events at the same
// times always give the same outputs.
type Core struct {
	cfg     Config
	workers map[string]*worker
	names   []string // worker names, in the order first seen
	sorted  bool     // names is sorted
	jobs    map[string]*job
	all     []*job // every known job, by arrival
	live    []*job // the active jobs, by arrival
	// speculating and replanning are the live jobs that speculate, and
	// whose policy re-plans shares, by arrival.
	speculating, replanning []*job
	// placeable are the live jobs that had placeable units when last
	// looked at, by arrival: the jobs dispatch visits.
	placeable []*job
	seq       int
	now       time.Time
	gen       int // bumped when a worker comes up or goes down
	pass      int // bumped by every dispatch
	scratch   []*worker
	ints      []int

	// The indexes (index.go) and the finder that walks them (find.go).
	find   finder
	walker walker
	spare  walker // firstFit's second walk
	// depthSpeed is byDepthSpeed, made once (a walk keeps its order).
	depthSpeed func(a, b *worker) int
	work       work       // what placement did (work.go)
	rs         []*ranking // the rankings a query walks
	spareRs    []*ranking // and spare's
	opIdx      map[string]*opIndex
	opOrder    []*opIndex // opIdx's values, in the order made
	idleOps    []idleOp   // indexes no live job uses, oldest first
	opClock    int
	reserved   []*worker // reserved (flagged) in this dispatch pass
	// reservations are those noted in this pass, resSeq counts them
	// (reserve.go).
	reservations []reservation
	resSeq       int
	// roomCount counts the up workers with room.
	roomCount int
	// rateSum and rateThreads total the rates and threads of the up
	// workers that are measured (estRate).
	rateSum     float64
	rateThreads int
	spareRuns   []*run
}

// New returns an empty core; zero fields of cfg take their defaults.
func New(cfg Config) *Core {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxWindow <= 0 {
		cfg.MaxWindow = DefaultMaxWindow
	}
	cfg.MaxWindow = max(cfg.MaxWindow, cfg.Window)
	if cfg.SpeculateAfter <= 0 {
		cfg.SpeculateAfter = DefaultSpeculateAfter
	}
	if cfg.ByteHorizon == 0 {
		cfg.ByteHorizon = DefaultByteHorizon
	}
	c := &Core{cfg: cfg, workers: map[string]*worker{}, jobs: map[string]*job{}, gen: 1,
		find: indexed{}, opIdx: map[string]*opIndex{}}
	c.walker.work, c.spare.work = &c.work, &c.work
	c.depthSpeed = c.byDepthSpeed
	return c
}

// Step applies one event at time now and returns what to do about it: the
// event's own results plus any units that can now be placed. An invalid
// event returns an error and changes nothing. Speculation is decided only
// by Tick.
func (c *Core) Step(now time.Time, ev Event) (Output, error) {
	var out Output
	var err error
	c.now = now
	switch ev := ev.(type) {
	case WorkerUp:
		err = c.workerUp(ev)
	case WorkerLease:
		err = c.workerLease(ev)
	case WorkerHold:
		err = c.workerHold(ev)
	case WorkerDown:
		err = c.workerDown(ev)
	case JobAdded:
		err = c.jobAdded(ev, &out)
	case JobCancelled:
		err = c.jobCancelled(ev, &out)
	case UnitFinished:
		c.unitFinished(ev, &out)
	case UnitReturned:
		c.unitReturned(ev)
	case Feedback:
		err = c.feedback(ev)
	case UnitsReleased:
		err = c.unitsReleased(ev)
	default:
		err = fmt.Errorf("%w: %T", ErrUnknownEvent, ev)
	}
	if err != nil {
		return Output{}, err
	}
	c.dispatch(&out)
	return out, nil
}

// Tick runs the timers at time now: it places what can be placed and
// starts end-of-job speculation (speculation.go). The owner calls it
// periodically (every 100ms is plenty) and may call it after a burst of
// events, so that speculation sees the burst whole.
func (c *Core) Tick(now time.Time) Output {
	var out Output
	c.now = now
	c.dispatch(&out)
	c.speculate(&out)
	return out
}

// Speculating reports whether some live job may get end-of-job
// duplicates: it speculates and has no pending unit. While it does, its
// owner should call Tick often (every few ms) and after each burst of
// results, since a job's tail can be far shorter than the usual tick.
func (c *Core) Speculating() bool {
	for _, j := range c.speculating {
		if j.speculate && j.pending == 0 {
			return true
		}
	}
	return false
}

func (c *Core) workerUp(ev WorkerUp) error {
	if err := validateWorkerUp(ev); err != nil {
		return err
	}
	old := c.workers[ev.Worker]
	if old != nil && old.up {
		c.down(old)
	}
	w := newWorker(ev, c.cfg.Window)
	w.horizon = c.cfg.ByteHorizon
	if old != nil { // the same machine: keep what was learned of its speed
		w.unitTime, w.samples, w.fbRate, w.avgSize = old.unitTime, old.samples, old.fbRate, old.avgSize
	} else {
		c.names = append(c.names, ev.Worker)
		c.sorted = false
	}
	c.workers[ev.Worker] = w
	c.join(w)
	c.gen++
	c.replanSpeed()
	return nil
}

func (c *Core) workerLease(ev WorkerLease) error {
	w := c.workers[ev.Worker]
	if w == nil || !w.up {
		return fmt.Errorf("%w: %q", ErrUnknownWorker, ev.Worker)
	}
	if ev.Streams < 0 || ev.Streams > len(w.inflight) {
		return fmt.Errorf("%w: lease of %d streams on %q, which has %d", ErrBadWorker, ev.Streams, ev.Worker, len(w.inflight))
	}
	if w.lease != ev.Streams {
		w.lease = ev.Streams
		c.refresh(w)
		c.replanSpeed()
	}
	return nil
}

func (c *Core) workerHold(ev WorkerHold) error {
	w := c.workers[ev.Worker]
	if w == nil || !w.up {
		return fmt.Errorf("%w: %q", ErrUnknownWorker, ev.Worker)
	}
	w.holdBytes = max(ev.HoldBytes, 0)
	c.refresh(w)
	return nil
}

func (c *Core) workerDown(ev WorkerDown) error {
	w := c.workers[ev.Worker]
	if w == nil || !w.up {
		return fmt.Errorf("%w: %q", ErrUnknownWorker, ev.Worker)
	}
	c.down(w)
	c.replanSpeed()
	return nil
}

// down marks w down and gives back everything it held: its in-flight
// units go back to pending (their next send is a new Attempt) and its
// unsent static shares go to the jobs' pools.
func (c *Core) down(w *worker) {
	for _, m := range w.shm { // the live jobs' shares it holds
		m.s.release(w.name)
	}
	c.leave(w)
	w.up = false
	c.gen++
	clear(w.inflight)
	for _, r := range w.held {
		c.requeue(r.j, r.i, w)
	}
	w.held, w.bytes = nil, 0
}

// requeue forgets unit i's copies on worker w; a unit left with no copy
// goes back to pending.
func (c *Core) requeue(j *job, i int, w *worker) {
	r := j.run(i)
	if r == nil {
		return
	}
	n := len(r.copies)
	r.copies = slices.DeleteFunc(r.copies, func(a attempt) bool { return a.worker == w })
	j.copies -= n - len(r.copies)
	if len(r.copies) == n || len(r.copies) > 0 || j.state(i) != unitRunning {
		j.dropRun(i, &c.spareRuns)
		return
	}
	j.setPending(i, true, unitPending)
	if s := j.queueOf(i).share; s != nil {
		s.pool++
	}
	c.wake(j)
}

func (c *Core) jobAdded(ev JobAdded, out *Output) error {
	if _, dup := c.jobs[ev.Job]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateJob, ev.Job)
	}
	j, err := newJob(ev, c.seq)
	if err != nil {
		return err
	}
	c.seq++
	c.jobs[j.name] = j
	c.all = append(c.all, j)
	if j.finished { // every unit was done before a restart
		out.JobsDone = append(out.JobsDone, j.name)
		return nil
	}
	c.live = append(c.live, j)
	if j.speculate {
		c.speculating = append(c.speculating, j)
	}
	if j.policy.replans() {
		c.replanning = append(c.replanning, j)
	}
	for _, q := range j.ops {
		q.x = c.useOp(q.op)
		q.x.demand += q.pending - q.held
	}
	c.wake(j)
	return nil
}

func (c *Core) unitsReleased(ev UnitsReleased) error {
	j := c.jobs[ev.Job]
	if j == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, ev.Job)
	}
	for _, i := range ev.Units {
		if i < 0 || i >= j.n {
			return fmt.Errorf("%w: unit %d of job %q", ErrBadUnit, i, ev.Job)
		}
	}
	if !j.active() {
		return nil
	}
	sized := len(ev.Sizes) == len(ev.Units)
	for k, i := range ev.Units {
		if sized && j.held(i) {
			j.setSize(i, max(ev.Sizes[k], 0))
		}
		j.release(i)
	}
	c.wake(j)
	return nil
}

func (c *Core) jobCancelled(ev JobCancelled, out *Output) error {
	j := c.jobs[ev.Job]
	if j == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, ev.Job)
	}
	if j.active() {
		j.cancelled = true
		c.retire(j)
		out.JobsDone = append(out.JobsDone, j.name)
	}
	return nil
}

func (c *Core) feedback(ev Feedback) error {
	w := c.workers[ev.Worker]
	if w == nil || !w.up {
		return fmt.Errorf("%w: %q", ErrUnknownWorker, ev.Worker)
	}
	changed := w.feedback(ev, c.now, c.cfg.MaxWindow)
	c.refresh(w)
	if changed {
		c.replanSpeed()
	}
	return nil
}

// estRate is w's estimated service rate for the speed policy: measured if
// it can be; else, if other up workers are measured, their mean rate per
// thread times w's threads; else just w's threads.
func (c *Core) estRate(w *worker) float64 {
	if r := w.rate(); r > 0 {
		return r
	}
	if c.rateThreads == 0 {
		return float64(w.threads)
	}
	return float64(w.threads) * c.rateSum / float64(c.rateThreads)
}

// retire takes a job that is no longer active off the live list, and out
// of the indexes.
func (c *Core) retire(j *job) {
	c.live = slices.DeleteFunc(c.live, func(o *job) bool { return o == j })
	c.speculating = slices.DeleteFunc(c.speculating, func(o *job) bool { return o == j })
	c.replanning = slices.DeleteFunc(c.replanning, func(o *job) bool { return o == j })
	for _, q := range j.ops {
		if q.share != nil {
			q.share.unindex()
		}
		if q.x != nil {
			q.x.demand -= q.pending - q.held
			c.unuseOp(q.x)
			q.x = nil
		}
	}
}

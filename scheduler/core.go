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
	names   []string  // worker names, sorted
	byName  []*worker // workers[names[k]], for each k
	jobs    map[string]*job
	all     []*job // every known job, by arrival
	live    []*job // the active jobs, by arrival
	seq     int
	now     time.Time
	gen     int // bumped when a worker comes up or goes down
	pass    int // bumped by every dispatch
	scratch []*worker
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
	return &Core{cfg: cfg, workers: map[string]*worker{}, jobs: map[string]*job{}, gen: 1}
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
	for _, j := range c.live {
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
		slices.Sort(c.names)
	}
	c.workers[ev.Worker] = w
	c.byName = c.byName[:0]
	for _, n := range c.names {
		c.byName = append(c.byName, c.workers[n])
	}
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
	w.up = false
	c.gen++
	clear(w.inflight)
	for _, r := range w.held {
		c.requeue(r.j, r.i, w.name)
	}
	w.held, w.bytes = nil, 0
	for _, j := range c.live {
		for _, q := range j.ops {
			if q.share != nil {
				q.share.release(w.name)
			}
		}
	}
}

// requeue forgets unit i's copies on worker w; a unit left with no copy
// goes back to pending.
func (c *Core) requeue(j *job, i int, w string) {
	u := &j.units[i]
	n := len(u.copies)
	u.copies = slices.DeleteFunc(u.copies, func(a attempt) bool { return a.worker == w })
	j.copies -= n - len(u.copies)
	if len(u.copies) == n || len(u.copies) > 0 || u.state != unitRunning {
		return
	}
	j.setPending(i, true, unitPending)
	if s := j.ops[u.oq].share; s != nil {
		s.pool++
	}
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
	return nil
}

func (c *Core) unitsReleased(ev UnitsReleased) error {
	j := c.jobs[ev.Job]
	if j == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, ev.Job)
	}
	for _, i := range ev.Units {
		if i < 0 || i >= len(j.units) {
			return fmt.Errorf("%w: unit %d of job %q", ErrBadUnit, i, ev.Job)
		}
	}
	if !j.active() {
		return nil
	}
	sized := len(ev.Sizes) == len(ev.Units)
	for k, i := range ev.Units {
		if sized && j.units[i].held {
			j.units[i].Size = max(ev.Sizes[k], 0)
		}
		j.release(i)
	}
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
	if w.feedback(ev, c.now, c.cfg.MaxWindow) {
		c.replanSpeed()
	}
	return nil
}

// replanSpeed re-divides the unsent shares of jobs whose policy follows
// the speed estimates.
func (c *Core) replanSpeed() {
	for _, j := range c.live {
		if j.active() && j.policy.replans() {
			j.replan(c)
		}
	}
}

// estRate is w's estimated service rate for the speed policy: measured if
// it can be; else, if other up workers are measured, their mean rate per
// thread times w's threads; else just w's threads.
func (c *Core) estRate(w *worker) float64 {
	if r := w.rate(); r > 0 {
		return r
	}
	sum, threads := 0.0, 0
	for _, o := range c.byName {
		if o.up && o.rate() > 0 {
			sum += o.rate()
			threads += o.threads
		}
	}
	if threads == 0 {
		return float64(w.threads)
	}
	return float64(w.threads) * sum / float64(threads)
}

// retire takes a job that is no longer active off the live list.
func (c *Core) retire(j *job) {
	c.live = slices.DeleteFunc(c.live, func(o *job) bool { return o == j })
}

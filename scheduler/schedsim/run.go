package schedsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/braidhq/braid/scheduler"
)

func newSim(cfg Config) (*sim, error) {
	if cfg.Limit <= 0 {
		cfg.Limit = 1000 * time.Hour
	}
	if cfg.NewCore == nil {
		cfg.NewCore = scheduler.New
	}
	s := &sim{cfg: cfg, core: cfg.NewCore(cfg.Core), workers: map[string]*simWorker{}, clock: time.Now(),
		rng: rand.New(rand.NewPCG(cfg.Seed, 1)), jobs: map[string]*simJob{},
		res: Result{Accepted: map[string]int{}}}
	fastest := time.Duration(0)
	for _, w := range cfg.Workers {
		if w.UnitTime <= 0 || w.Streams <= 0 {
			return s, fmt.Errorf("schedsim: worker %q needs streams and a unit time", w.Name)
		}
		if _, dup := s.workers[w.Name]; dup {
			return s, fmt.Errorf("schedsim: two workers named %q", w.Name)
		}
		if len(w.Ops) == 0 {
			w.Ops = []string{"op"}
		}
		sw := &simWorker{Worker: w, ops: map[string]bool{}}
		for _, op := range w.Ops {
			sw.ops[op] = true
		}
		s.workers[w.Name] = sw
		s.order = append(s.order, sw)
		if fastest == 0 || w.UnitTime < fastest {
			fastest = w.UnitTime
		}
		s.plan(sw)
	}
	slices.SortStableFunc(s.changes, func(a, b change) int { return int(a.at - b.at) })
	if s.cfg.Tick <= 0 {
		s.cfg.Tick = max(fastest/10, 1)
	}
	for k, w := range s.order {
		if k%1024 == 0 && s.cfg.Stop != nil && s.cfg.Stop() {
			return s, ErrStopped
		}
		if err := s.up(w); err != nil {
			return s, err
		}
	}
	for _, j := range cfg.Jobs {
		if err := s.addJob(j); err != nil {
			return s, err
		}
	}
	return s, nil
}

// plan schedules w's membership changes: down at DownAt, up again at UpAt
// if that is later.
func (s *sim) plan(w *simWorker) {
	if w.DownAt > 0 {
		s.changes = append(s.changes, change{at: w.DownAt, w: w})
		if w.UpAt > w.DownAt {
			s.changes = append(s.changes, change{at: w.UpAt, w: w, up: true})
		}
	}
}

func (s *sim) addJob(j Job) error {
	if j.Op == "" {
		j.Op = "op"
	}
	if _, dup := s.jobs[j.Name]; dup {
		return fmt.Errorf("schedsim: two jobs named %q", j.Name)
	}
	size := j.Size
	if j.LateSize {
		size = 0
	}
	ev := scheduler.JobAdded{Job: j.Name, Policy: j.Policy, Speculate: j.Speculate,
		Repeat: scheduler.Repeat{Count: j.Units, Op: j.Op, Size: size}}
	if j.Listed {
		ev.Repeat = scheduler.Repeat{}
		ev.Units = make([]scheduler.Unit, j.Units)
		for i := range ev.Units {
			ev.Units[i] = scheduler.Unit{Index: i, Op: j.Op, Size: size}
		}
	}
	s.jobs[j.Name] = &simJob{Job: j, accepted: newBitset(j.Units)}
	s.open++
	return s.step(ev)
}

func (s *sim) up(w *simWorker) error {
	w.up, w.gen = true, w.gen+1
	w.busy, w.own, w.bytes, w.sizedBytes = make([]time.Duration, w.Streams), make([]int, w.Streams), 0, 0
	return s.step(scheduler.WorkerUp{Worker: w.Name, Streams: w.Streams, Threads: w.Threads, Ops: w.Ops, HoldBytes: w.HoldBytes})
}

func (s *sim) down(w *simWorker) error {
	w.up = false
	return s.step(scheduler.WorkerDown{Worker: w.Name})
}

// advance moves to the next instant: results due then, membership changes,
// then a Tick.
func (s *sim) advance() error {
	next := (s.now/s.cfg.Tick + 1) * s.cfg.Tick
	if len(s.q) > 0 {
		next = min(next, s.q.peek().at)
	}
	if len(s.changes) > 0 && s.changes[0].at > s.now {
		next = min(next, s.changes[0].at)
	}
	s.now = next
	for len(s.q) > 0 && s.q.peek().at == s.now {
		if err := s.deliver(s.q.pop()); err != nil {
			return err
		}
	}
	if err := s.membership(); err != nil {
		return err
	}
	return s.apply(s.tick())
}

// membership applies the changes due by now, in the order of the workers.
func (s *sim) membership() error {
	for len(s.changes) > 0 && s.changes[0].at <= s.now {
		c := s.changes[0]
		s.changes = s.changes[1:]
		var err error
		switch {
		case !c.up && c.w.up:
			err = s.down(c.w)
		case c.up && !c.w.up:
			err = s.up(c.w)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *sim) deliver(r result) error {
	w := s.workers[r.ev.Worker]
	if r.gen == w.gen && w.up {
		w.own[r.ev.Stream]--
		size := s.jobs[r.ev.Job].Size
		w.bytes -= size
		if !s.jobs[r.ev.Job].LateSize {
			w.sizedBytes -= size
		}
	}
	if err := s.step(r.ev); err != nil {
		return err
	}
	if err := s.checkBytes(w); err != nil {
		return err
	}
	if s.cfg.Feedback && w.up {
		return s.step(s.feedback(w))
	}
	return nil
}

func (s *sim) feedback(w *simWorker) scheduler.Feedback {
	queued := 0
	for st, n := range w.own {
		if n > 0 && w.busy[st] > s.now {
			queued += n - 1
		}
	}
	return scheduler.Feedback{Worker: w.Name, QueueDepth: queued,
		ServiceRate: float64(w.Streams) / w.UnitTime.Seconds()}
}

func (s *sim) at() time.Time { return epoch.Add(s.now) }

func (s *sim) step(ev scheduler.Event) error {
	var out scheduler.Output
	var err error
	s.timed(func() { out, err = s.core.Step(s.at(), ev) })
	if err != nil {
		return err
	}
	return s.apply(out)
}

func (s *sim) tick() (out scheduler.Output) {
	s.timed(func() { out = s.core.Tick(s.at()) })
	return out
}

// timed runs f, a call that drives the core, and adds its wall time to
// the result's CoreTime when the run measures it.
func (s *sim) timed(f func()) {
	s.res.CoreCalls++
	if !s.cfg.MeasureCore {
		f()
		return
	}
	t0 := time.Since(s.clock) // a monotonic reading only: cheaper than time.Now
	f()
	s.res.CoreTime += time.Since(s.clock) - t0
}

func (s *sim) apply(out scheduler.Output) error {
	if s.cfg.Observe != nil {
		s.cfg.Observe(out)
	}
	for _, a := range out.Assign {
		if err := s.assign(a); err != nil {
			return err
		}
	}
	if err := s.checkAssigned(out.Assign); err != nil {
		return err
	}
	for _, f := range out.Accepted {
		j := s.jobs[f.Job]
		if j == nil || f.Unit < 0 || f.Unit >= j.Units {
			return fmt.Errorf("schedsim: accepted a unit of no job: %+v", f)
		}
		if j.accepted.has(f.Unit) {
			return fmt.Errorf("schedsim: unit %s/%d accepted twice", f.Job, f.Unit)
		}
		j.accepted.set(f.Unit)
		j.count++
		s.res.Units++
		s.res.Accepted[f.Worker]++
	}
	s.res.Dropped += len(out.Dropped)
	for _, name := range out.JobsDone {
		if j := s.jobs[name]; j != nil && !j.done {
			j.done = true
			s.open--
		}
		s.res.Makespan = s.now
	}
	return nil
}

// checkAssigned checks the bytes in flight on the workers just sent units
// (on every worker, in small runs).
func (s *sim) checkAssigned(as []scheduler.Assignment) error {
	if len(s.order) <= FullCheckWorkers {
		return s.checkEvery()
	}
	for k, a := range as {
		if k > 0 && as[k-1].Worker == a.Worker {
			continue
		}
		if err := s.checkBytes(s.workers[a.Worker]); err != nil {
			return err
		}
	}
	return nil
}

func (s *sim) assign(a scheduler.Assignment) error {
	w := s.workers[a.Worker]
	if w == nil || !w.up || a.Stream < 0 || a.Stream >= w.Streams {
		return fmt.Errorf("schedsim: assignment to missing worker or stream: %+v", a)
	}
	j := s.jobs[a.Job]
	if j == nil || a.Unit < 0 || a.Unit >= j.Units {
		return fmt.Errorf("schedsim: assignment of a unit of no job: %+v", a)
	}
	s.res.Assigned++
	if a.Speculative {
		s.res.Speculative++
	}
	if !w.ops[j.Op] {
		return fmt.Errorf("schedsim: %+v: worker cannot run %q", a, j.Op)
	}
	alone := slices.Max(w.own) == 0
	w.own[a.Stream]++
	w.bytes += j.Size
	if !j.LateSize {
		w.sizedBytes += j.Size
	}
	if j.LateSize { // the core ignores a size it knows, so only these call
		s.timed(func() { s.core.SetSize(a.Job, a.Unit, j.Size) })
	}
	if limit := s.window(a.Worker); w.own[a.Stream] > limit {
		return fmt.Errorf("schedsim: %+v: %d units in flight on a window of %d", a, w.own[a.Stream], limit)
	}
	if w.HoldBytes > 0 && !alone && w.sizedBytes > w.HoldBytes {
		return fmt.Errorf("schedsim: %+v: %d bytes of units sized when added in flight on a worker that holds %d", a, w.sizedBytes, w.HoldBytes)
	}
	start := max(s.now, w.busy[a.Stream])
	w.busy[a.Stream] = start + s.unitTime(w)
	s.seq++
	s.q.push(result{at: w.busy[a.Stream], seq: s.seq, gen: w.gen, ev: scheduler.UnitFinished{
		Job: a.Job, Unit: a.Unit, Worker: a.Worker, Stream: a.Stream, Attempt: a.Attempt,
		Queued: start - s.now, Compute: w.busy[a.Stream] - start}})
	return nil
}

// checkBytes checks that the core counts the input bytes in flight on w
// that the simulator does.
func (s *sim) checkBytes(w *simWorker) error {
	if !w.up {
		return nil
	}
	if got, _ := s.core.Bytes(w.Name); got != w.bytes {
		return fmt.Errorf("schedsim: the core counts %d bytes in flight on %s, which has %d", got, w.Name, w.bytes)
	}
	return nil
}

// checkEvery checks every worker's bytes.
func (s *sim) checkEvery() error {
	for _, w := range s.order {
		if err := s.checkBytes(w); err != nil {
			return err
		}
	}
	return nil
}

func (s *sim) window(name string) int {
	st, _ := s.core.Worker(name)
	return st.Window
}

func (s *sim) unitTime(w *simWorker) time.Duration {
	if s.cfg.Jitter <= 0 {
		return w.UnitTime
	}
	f := 1 + s.cfg.Jitter*(2*s.rng.Float64()-1)
	return max(time.Duration(f*float64(w.UnitTime)), 1)
}

func (s *sim) checkAll() error {
	for _, j := range s.cfg.Jobs {
		if n := s.jobs[j.Name].count; n != j.Units {
			return fmt.Errorf("schedsim: job %s done with %d of %d units accepted", j.Name, n, j.Units)
		}
	}
	return nil
}

func (s *sim) result() Result {
	if s == nil {
		return Result{}
	}
	return s.res
}

// bitset is a set of unit indexes, a bit each.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }

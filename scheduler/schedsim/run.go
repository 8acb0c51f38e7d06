package schedsim

import (
	"container/heap"
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
	s := &sim{cfg: cfg, core: scheduler.New(cfg.Core), workers: map[string]*simWorker{},
		rng: rand.New(rand.NewPCG(cfg.Seed, 1)), accepted: map[string]map[int]bool{},
		open: map[string]bool{}, res: Result{Accepted: map[string]int{}}}
	fastest := time.Duration(0)
	for _, w := range cfg.Workers {
		if w.UnitTime <= 0 || w.Streams <= 0 {
			return nil, fmt.Errorf("schedsim: worker %q needs streams and a unit time", w.Name)
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
	}
	if s.cfg.Tick <= 0 {
		s.cfg.Tick = max(fastest/10, 1)
	}
	for _, w := range s.order {
		if err := s.up(w); err != nil {
			return nil, err
		}
	}
	for _, j := range cfg.Jobs {
		if err := s.addJob(j); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *sim) addJob(j Job) error {
	if j.Op == "" {
		j.Op = "op"
	}
	units := make([]scheduler.Unit, j.Units)
	for i := range units {
		units[i] = scheduler.Unit{Index: i, Op: j.Op, Size: j.Size}
		if j.LateSize {
			units[i].Size = 0
		}
	}
	s.open[j.Name] = true
	s.accepted[j.Name] = map[int]bool{}
	return s.step(scheduler.JobAdded{Job: j.Name, Policy: j.Policy, Speculate: j.Speculate, Units: units})
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
	for _, w := range s.order {
		for _, t := range []time.Duration{w.DownAt, w.UpAt} {
			if t > s.now && t < next {
				next = t
			}
		}
	}
	s.now = next
	for len(s.q) > 0 && s.q.peek().at == s.now {
		if err := s.deliver(heap.Pop(&s.q).(result)); err != nil {
			return err
		}
	}
	if err := s.membership(); err != nil {
		return err
	}
	return s.apply(s.core.Tick(s.at()))
}

func (s *sim) membership() error {
	for _, w := range s.order {
		var err error
		switch {
		case w.DownAt == s.now && w.up:
			err = s.down(w)
		case w.UpAt == s.now && w.UpAt > w.DownAt && !w.up:
			err = s.up(w)
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
		w.bytes -= s.sizeOf(r.ev.Job)
		if !s.late(r.ev.Job) {
			w.sizedBytes -= s.sizeOf(r.ev.Job)
		}
	}
	if err := s.step(r.ev); err != nil {
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
	out, err := s.core.Step(s.at(), ev)
	if err != nil {
		return err
	}
	return s.apply(out)
}

func (s *sim) apply(out scheduler.Output) error {
	for _, a := range out.Assign {
		if err := s.assign(a); err != nil {
			return err
		}
	}
	for _, f := range out.Accepted {
		if s.accepted[f.Job][f.Unit] {
			return fmt.Errorf("schedsim: unit %s/%d accepted twice", f.Job, f.Unit)
		}
		s.accepted[f.Job][f.Unit] = true
		s.res.Accepted[f.Worker]++
	}
	s.res.Dropped += len(out.Dropped)
	for _, j := range out.JobsDone {
		delete(s.open, j)
		s.res.Makespan = s.now
	}
	for _, w := range s.workers {
		if got, _ := s.core.Bytes(w.Name); w.up && got != w.bytes {
			return fmt.Errorf("schedsim: the core counts %d bytes in flight on %s, which has %d", got, w.Name, w.bytes)
		}
	}
	return nil
}

func (s *sim) assign(a scheduler.Assignment) error {
	w := s.workers[a.Worker]
	if w == nil || !w.up || a.Stream < 0 || a.Stream >= w.Streams {
		return fmt.Errorf("schedsim: assignment to missing worker or stream: %+v", a)
	}
	s.res.Assigned++
	if a.Speculative {
		s.res.Speculative++
	}
	if !w.ops[s.opOf(a.Job)] {
		return fmt.Errorf("schedsim: %+v: worker cannot run %q", a, s.opOf(a.Job))
	}
	alone := slices.Max(w.own) == 0
	w.own[a.Stream]++
	w.bytes += s.sizeOf(a.Job)
	if !s.late(a.Job) {
		w.sizedBytes += s.sizeOf(a.Job)
	}
	s.core.SetSize(a.Job, a.Unit, s.sizeOf(a.Job)) // ignored unless the job's sizes come late
	if limit := s.window(a.Worker); w.own[a.Stream] > limit {
		return fmt.Errorf("schedsim: %+v: %d units in flight on a window of %d", a, w.own[a.Stream], limit)
	}
	if w.HoldBytes > 0 && !alone && w.sizedBytes > w.HoldBytes {
		return fmt.Errorf("schedsim: %+v: %d bytes of units sized when added in flight on a worker that holds %d", a, w.sizedBytes, w.HoldBytes)
	}
	start := max(s.now, w.busy[a.Stream])
	w.busy[a.Stream] = start + s.unitTime(w)
	s.seq++
	heap.Push(&s.q, result{at: w.busy[a.Stream], seq: s.seq, gen: w.gen, ev: scheduler.UnitFinished{
		Job: a.Job, Unit: a.Unit, Worker: a.Worker, Stream: a.Stream, Attempt: a.Attempt,
		Queued: start - s.now, Compute: w.busy[a.Stream] - start}})
	return nil
}

// late reports whether job's sizes come late: the core cannot keep a
// budget for units it places before it knows their size.
func (s *sim) late(job string) bool {
	for _, j := range s.cfg.Jobs {
		if j.Name == job {
			return j.LateSize
		}
	}
	return false
}

func (s *sim) sizeOf(job string) int64 {
	for _, j := range s.cfg.Jobs {
		if j.Name == job {
			return j.Size
		}
	}
	return 0
}

func (s *sim) opOf(job string) string {
	for _, j := range s.cfg.Jobs {
		if j.Name == job && j.Op != "" {
			return j.Op
		}
	}
	return "op"
}

func (s *sim) window(name string) int {
	ws := s.core.Workers()
	i := slices.IndexFunc(ws, func(w scheduler.WorkerStatus) bool { return w.Name == name })
	return ws[i].Window
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
		if n := len(s.accepted[j.Name]); n != j.Units {
			return fmt.Errorf("schedsim: job %s done with %d of %d units accepted", j.Name, n, j.Units)
		}
	}
	return nil
}

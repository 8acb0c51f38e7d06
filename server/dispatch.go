package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/wire"
)

// dispatcher is the server's scheduling loop. One goroutine (run) owns every
// field; other goroutines reach it through ctl (closures run on the loop) and
// results (units coming back from workers).
type dispatcher struct {
	s       *Server
	log     *slog.Logger
	core    *scheduler.Core
	ctl     chan func()
	exited  chan struct{} // closed when run has returned: what is still in ctl never runs
	results chan resultMsg
	jobs    map[string]*jobRun
	ended   map[string]*jobRun // terminal jobs the core still holds
	// downstream are, by upstream job id, the jobs waiting on its outputs
	// (inputjob.go).
	downstream map[string][]*jobRun
	inflight   map[uint64]flight
	workers    map[string]*workerConn
	addrs      addrOwners // who registered each worker endpoint last (addrs.go)
	roster     *roster    // the workers' signs of life, shared with the HTTP handlers
	// views are what the read-only pages show, published by the loop
	// (views.go); dirty are the workers whose records this step changed,
	// nextCounts when the counts are published next.
	views      *views
	dirty      []*workerConn
	nextCounts time.Time
	// countsShown: no job nor unit was left when the counts were last
	// published, so they are all shown as they are (publishCounts).
	countsShown bool
	nextID      uint64
	nextGen     int // association generations, unique across all workers
	// admit bounds the units sent and not yet answered (admission.go);
	// nextAdjust is when the bound moves next.
	admit      *admission
	nextAdjust time.Time
	// assembling counts jobs whose result is being built off the loop.
	assembling int
	// draining: the server is stopping; no unit goes out (drain.go).
	// drained is closed, and set to nil, once nothing is in flight.
	draining bool
	drained  chan struct{}
	// wantsStale: the wants must be sent once more though no job is left;
	// nextScan is when the heartbeats are checked next (onTick).
	wantsStale          bool
	nextWants, nextScan time.Time
}

// flight is one unit sent to a worker and not yet answered.
type flight struct {
	job     *jobRun
	index   int
	attempt int
	worker  string
	stream  int
	gen     int
	sent    time.Time
	unsent  bool // never left the server (it could not be sent)
	parked  bool // placed but held back by the admission bound (admission.go)
}

// resultMsg is a result read (and its output stored) by a stream reader, or
// a lease (kind KindLease).
type resultMsg struct {
	worker   string
	gen      int
	stream   int
	kind     wire.Kind
	lease    wire.Lease
	res      wire.Result
	output   string // stored object id when res.Status is OK
	size     int64
	returned time.Time
}

func newDispatcher(s *Server) *dispatcher {
	d := &dispatcher{
		s:          s,
		log:        s.log.With("component", "dispatch"), // not a group: keys stay job=, unit=, worker= as elsewhere
		core:       scheduler.New(scheduler.Config{Window: s.cfg.Window, ByteHorizon: s.cfg.ByteHorizon}),
		ctl:        make(chan func(), 64),
		exited:     make(chan struct{}),
		results:    make(chan resultMsg, 1024),
		jobs:       map[string]*jobRun{},
		ended:      map[string]*jobRun{},
		downstream: map[string][]*jobRun{},
		inflight:   map[uint64]flight{},
		workers:    map[string]*workerConn{},
		addrs:      addrOwners{},
		roster:     newRoster(s.cfg.HeartbeatInterval, s.cfg.HeartbeatTimeout, s.cfg.HeartbeatRate),
		views:      &views{},
		nextID:     uint64(time.Now().UnixNano()),
		admit:      newAdmission(s.cfg.SchedTarget),
	}
	d.views.running.Store(&map[string]int{})
	return d
}

// do runs f on the loop and waits for it; it fails if the server stops.
// When ctx ends first, do returns ctx's error only if f has not started,
// and then f never runs; once f has started, do waits for it, since f may
// read and write what its caller owns (the request, the caller's results).
func (d *dispatcher) do(ctx context.Context, f func()) error {
	const queued, started, abandoned = 0, 1, 2
	var state atomic.Int32
	done := make(chan struct{})
	run := func() {
		if state.CompareAndSwap(queued, started) {
			f()
			d.publishTouched() // what f changed is on the pages when do returns
			close(done)
		}
	}
	select {
	case d.ctl <- run:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.s.stopped:
		return ErrServerClosed
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		if state.CompareAndSwap(queued, abandoned) {
			return ctx.Err()
		}
	case <-d.exited:
		return ErrServerClosed // the loop is gone: what is still in ctl never runs
	}
	select { // f is running on the loop: it ends soon
	case <-done:
		return nil
	case <-d.exited:
		return ErrServerClosed
	}
}

// post queues f on the loop without waiting; after shutdown it drops f and
// reports false.
func (d *dispatcher) post(f func()) bool {
	select {
	case d.ctl <- f:
		return true
	case <-d.s.stopped:
		return false
	}
}

// Housekeeping (heartbeats, forgetting ended jobs) runs every tickEvery;
// while a job is in its speculation tail, the core is also ticked every
// tailTickEvery and after each burst of results, so that duplicates start
// within milliseconds of a stream going idle, not up to a tick later.
const (
	tickEvery     = 100 * time.Millisecond
	tailTickEvery = 5 * time.Millisecond
)

func (d *dispatcher) run(ctx context.Context) {
	defer close(d.exited)
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	tail := time.NewTimer(time.Hour)
	tail.Stop()
	defer tail.Stop()
	var tailC <-chan time.Time // tail.C while armed
	for {
		select {
		case f := <-d.ctl:
			f()
		case r := <-d.results:
			d.onResult(r)
			if len(d.results) == 0 && d.core.Speculating() {
				d.apply(d.core.Tick(time.Now()))
			}
		case now := <-tick.C:
			d.onTick(now)
		case now := <-tailC:
			tailC = nil
			d.apply(d.core.Tick(now))
		case <-ctx.Done():
			d.shutdown()
			return
		}
		d.releaseParked()
		d.checkDrained()
		d.publishTouched()
		if tailC == nil && d.core.Speculating() {
			tail.Reset(tailTickEvery)
			tailC = tail.C
		}
	}
}

// shutdown ends every association and stops the stream senders.
func (d *dispatcher) shutdown() {
	for _, w := range d.workers {
		w.close(ErrServerClosed)
		for _, q := range w.queues {
			close(q)
		}
		w.assoc, w.queues = nil, nil
	}
}

// step feeds one event to the core and acts on the output.
func (d *dispatcher) step(ev scheduler.Event) scheduler.Output {
	out, err := d.core.Step(time.Now(), ev)
	if err != nil {
		d.log.Error("scheduler refused event", "event", fmt.Sprintf("%T", ev), "err", err)
		return out
	}
	d.apply(out)
	return out
}

// apply acts on the core's output and refreshes every job it touched, plus
// also (the job whose result caused the step), once each.
func (d *dispatcher) apply(out scheduler.Output, also ...*jobRun) {
	var buf [4]*jobRun // a step touches a job or two: no map per result
	touched := append(buf[:0], also...)
	touch := func(j *jobRun) {
		if !slices.Contains(touched, j) {
			touched = append(touched, j)
		}
	}
	for _, a := range out.Assign {
		if j := d.send(a); j != nil {
			touch(j)
		}
	}
	for _, id := range out.JobsDone {
		if j := d.jobs[id]; j != nil {
			touch(j)
			d.jobUnitsFinished(j)
		}
	}
	for _, j := range touched {
		d.refresh(j)
	}
}

// refresh copies the core's progress into the job and wakes its watchers.
// A job whose end is decided keeps the progress its record has.
func (d *dispatcher) refresh(j *jobRun) {
	if j.end != "" {
		return
	}
	p, ok := d.core.Progress(j.id)
	j.mu.Lock()
	defer j.mu.Unlock()
	if ok {
		j.core = api.Progress{Total: p.Total, Done: p.Done, Running: p.Running,
			Failed: p.Failed, Pending: p.Pending}
		j.publishLocked()
		j.waiting = waitingText(p.Waiting)
	}
	j.changed()
}

func (d *dispatcher) onResult(r resultMsg) {
	if r.kind == wire.KindLease {
		if w := d.workers[r.worker]; w != nil && w.gen == r.gen && w.assoc != nil {
			d.onLease(w, r.lease)
		}
		return
	}
	f, ok := d.inflight[r.res.ID]
	if !ok || f.worker != r.worker || f.gen != r.gen {
		d.log.Warn("result for no unit in flight", "worker", r.worker, "unit_id", r.res.ID)
		return
	}
	if f.parked { // never sent: ids are sequential, so a worker can name one
		d.log.Warn("result for a unit never sent; ignored", "worker", r.worker, "unit_id", r.res.ID)
		return
	}
	delete(d.inflight, r.res.ID)
	w := d.workers[r.worker]
	if w != nil && w.gen == f.gen {
		if k := slices.Index(w.flights, r.res.ID); k >= 0 {
			w.flights = slices.Delete(w.flights, k, k+1)
		}
	}
	if w != nil && w.lease == 0 {
		defer d.sendWant(w, false)
	}
	if r.res.Status == wire.StatusReturned {
		d.s.metrics.requeuedReturned.Inc()
		d.step(scheduler.UnitReturned{Job: f.job.id, Unit: f.index, Worker: f.worker, Stream: f.stream, Attempt: f.attempt})
		d.refresh(f.job)
		return
	}
	if r.res.Status == wire.StatusRefused {
		d.log.Warn("worker refused a unit; taking it off the worker", "worker", r.worker, "reason", r.res.Error)
		if w := d.workers[r.worker]; w != nil && w.assoc != nil {
			w.assoc.Abort(fmt.Errorf("server: worker refused unit: %s", r.res.Error))
		}
		return
	}
	if r.res.Rate > 0 {
		// The unit's time outside the worker's queue and threads; not
		// measured (0) if the worker's clock made it come out negative.
		transit := max(r.returned.Sub(f.sent)-r.res.Queued-r.res.Compute, 0)
		d.step(scheduler.Feedback{Worker: r.worker, QueueDepth: r.res.QueueDepth, ServiceRate: r.res.Rate, Transit: transit})
	}
	d.unitFinished(f, r)
}

// onTick runs the housekeeping. What looks at every worker runs only as
// often as it must: the wants while there are jobs (or a job just left),
// at most 10,000 workers' a second; the heartbeat timeouts every
// scanEvery.
func (d *dispatcher) onTick(now time.Time) {
	d.apply(d.core.Tick(now))
	d.forgetEnded()
	d.publishCounts(now)
	d.adjustAdmission(now)
	if (len(d.jobs) > 0 || d.wantsStale) && !now.Before(d.nextWants) {
		d.wantsStale = len(d.jobs) > 0 // once more after the last job goes: its wants fall to 0
		d.nextWants = now.Add(max(tickEvery, time.Duration(len(d.workers))*time.Second/wantsPerSecond))
		d.sendWants()
	}
	if now.Before(d.nextScan) {
		return
	}
	d.nextScan = now.Add(d.scanEvery())
	d.scanWorkers(now)
}

// scanWorkers forgets the workers down for longer than
// Config.ForgetWorkersAfter and takes those whose heartbeats stopped for
// dead, in one pass: at 10,000 idle workers each pass over them is a
// sizeable part of the server's work.
func (d *dispatcher) scanWorkers(now time.Time) {
	for _, w := range d.workers {
		if w.state == api.WorkerDown {
			d.forgetIfDownLong(w, now)
		} else {
			d.timeOut(w, now)
		}
	}
}

// wantsPerSecond bounds the workers whose want the tick looks at in a
// second: every tick up to 1,000 workers, every second at 10,000.
const wantsPerSecond = 10_000

// scanEvery is how often the workers' heartbeats are checked: a fifth of
// the heartbeat timeout, at most a second, at least a tick.
func (d *dispatcher) scanEvery() time.Duration {
	return max(min(d.s.cfg.HeartbeatTimeout/5, time.Second), tickEvery)
}

// timeOut takes w, which is not down, for dead if its heartbeats stopped
// for its timeout; a linked worker's association speaks for it (roster).
func (d *dispatcher) timeOut(w *workerConn, now time.Time) {
	if d.roster.linked(w.live) {
		return
	}
	if silent := now.Sub(w.live.lastSeen()); silent > d.roster.timeoutOf(w.live) {
		d.log.Warn("worker missed its heartbeats; taking its units back", "worker", w.info.Name,
			"silent_for", silent.Round(time.Millisecond))
		d.s.metrics.livenessBeat.Inc()
		d.workerDown(w, errors.New("heartbeat timeout"))
		w.state = api.WorkerDown
		d.touch(w)
		w.live.slow.Store(true) // its next heartbeat brings it back up, on the loop
	}
}

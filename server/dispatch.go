package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/wire"
)

// dispatcher is the server's scheduling loop. One goroutine (run) owns every
// field; other goroutines reach it through ctl (closures run on the loop) and
// results (units coming back from workers).
type dispatcher struct {
	s        *Server
	log      *slog.Logger
	core     *scheduler.Core
	ctl      chan func()
	results  chan resultMsg
	jobs     map[string]*jobRun
	ended    map[string]*jobRun // terminal jobs the core still holds
	inflight map[uint64]flight
	workers  map[string]*workerConn
	nextID   uint64
	nextGen  int // association generations, unique across all workers
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
}

// resultMsg is a result read (and its output stored) by a stream reader, or
// a lease (kind KindLease).
type resultMsg struct {
	worker   string
	gen      int
	stream   int
	kind     wire.Kind
	lease    int
	res      wire.Result
	output   string // stored object id when res.Status is OK
	size     int64
	returned time.Time
}

func newDispatcher(s *Server) *dispatcher {
	return &dispatcher{
		s:        s,
		log:      s.log.WithGroup("dispatch"),
		core:     scheduler.New(scheduler.Config{Window: s.cfg.Window}),
		ctl:      make(chan func(), 64),
		results:  make(chan resultMsg, 1024),
		jobs:     map[string]*jobRun{},
		ended:    map[string]*jobRun{},
		inflight: map[uint64]flight{},
		workers:  map[string]*workerConn{},
		nextID:   uint64(time.Now().UnixNano()),
	}
}

// do runs f on the loop and waits for it; it fails if the server stops.
func (d *dispatcher) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case d.ctl <- func() { f(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.s.stopped:
		return ErrServerClosed
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.s.stopped:
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
	touched := map[*jobRun]bool{}
	for _, j := range also {
		touched[j] = true
	}
	for _, a := range out.Assign {
		if j := d.send(a); j != nil {
			touched[j] = true
		}
	}
	for _, id := range out.JobsDone {
		if j := d.jobs[id]; j != nil {
			touched[j] = true
			d.jobUnitsFinished(j)
		}
	}
	for j := range touched {
		d.refresh(j)
	}
}

// send encodes an assignment and queues it on the worker's stream.
func (d *dispatcher) send(a scheduler.Assignment) *jobRun {
	j, w := d.jobs[a.Job], d.workers[a.Worker]
	if j == nil || w == nil || w.assoc == nil || a.Stream >= len(w.queues) {
		d.log.Error("assignment to unknown job or worker", "job", a.Job, "worker", a.Worker)
		return nil
	}
	d.nextID++
	id := d.nextID
	u := wire.Unit{ID: id, Job: j.id, Index: a.Unit, Attempt: a.Attempt, Op: j.spec.Op,
		Params: j.params, Input: j.inputs[a.Unit]}
	msg, err := wire.AppendUnit(getBuf(len(u.Input)+512), &u)
	if err != nil { // validated at submit; cannot happen
		d.log.Error("encode unit", "job", j.id, "unit", a.Unit, "err", err)
		return nil
	}
	select {
	case w.queues[a.Stream] <- msg:
	default:
		putBuf(msg)
		w.assoc.Abort(fmt.Errorf("server: send queue of stream %d overflowed", a.Stream))
		return nil
	}
	now := time.Now()
	d.inflight[id] = flight{job: j, index: a.Unit, attempt: a.Attempt, worker: a.Worker,
		stream: a.Stream, gen: w.gen, sent: now}
	j.mu.Lock()
	us := &j.units[a.Unit]
	if us.State != "done" && us.State != "failed" && !isTerminal(j.state) {
		us.State, us.Worker, us.Stream = "running", a.Worker, a.Stream
		us.Sent = &now
	}
	us.Attempts++
	if j.state == api.JobQueued {
		j.state = api.JobRunning
	}
	j.mu.Unlock()
	return j
}

// refresh copies the core's progress into the job and wakes its watchers.
func (d *dispatcher) refresh(j *jobRun) {
	p, ok := d.core.Progress(j.id)
	j.mu.Lock()
	defer j.mu.Unlock()
	if ok {
		j.progress = api.Progress{Total: p.Total, Done: p.Done, Running: p.Running,
			Failed: p.Failed, Pending: p.Pending}
		j.waiting = p.Waiting
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
	delete(d.inflight, r.res.ID)
	if w := d.workers[r.worker]; w != nil && w.lease == 0 {
		defer d.sendWant(w, false)
	}
	if r.res.Status == wire.StatusReturned {
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
	failed := r.res.Status == wire.StatusFailed
	ev := scheduler.UnitFinished{Job: f.job.id, Unit: f.index, Worker: f.worker, Stream: f.stream,
		Attempt: f.attempt, Failed: failed, Queued: r.res.Queued, Compute: r.res.Compute}
	if r.res.Rate > 0 {
		d.step(scheduler.Feedback{Worker: r.worker, QueueDepth: r.res.QueueDepth, ServiceRate: r.res.Rate})
	}
	out, err := d.core.Step(r.returned, ev)
	if err != nil {
		d.log.Error("scheduler refused result", "err", err)
		return
	}
	for _, acc := range out.Accepted {
		if acc.Job == f.job.id && acc.Unit == f.index {
			d.accept(f, r, failed)
		}
	}
	d.apply(out, f.job)
}

// accept records a counted result in the job's unit statistics.
func (d *dispatcher) accept(f flight, r resultMsg, failed bool) {
	if w := d.workers[f.worker]; w != nil {
		w.unitsDone++
	}
	j := f.job
	j.mu.Lock()
	us := &j.units[f.index]
	us.Worker, us.Stream = f.worker, f.stream
	sent, ret := f.sent, r.returned
	us.Sent, us.Returned = &sent, &ret
	us.QueuedMS = float64(r.res.Queued) / float64(time.Millisecond)
	us.ComputeMS = float64(r.res.Compute) / float64(time.Millisecond)
	us.Output, us.State = r.output, "done"
	if r.returned.After(j.lastResult) {
		j.lastResult = r.returned
	}
	firstFailure := false
	if failed {
		us.State, us.Error = "failed", r.res.Error
		firstFailure = j.errText == ""
		if firstFailure {
			j.errText = fmt.Sprintf("unit %d failed on worker %s: %s", f.index, f.worker, r.res.Error)
		}
	}
	j.mu.Unlock()
	if firstFailure {
		d.failJob(j)
	}
}

// failJob stops a job whose unit failed: the other units would be wasted.
func (d *dispatcher) failJob(j *jobRun) {
	j.mu.Lock()
	j.state = api.JobFailed
	j.finishedAt = time.Now()
	j.mu.Unlock()
	d.step(scheduler.JobCancelled{Job: j.id})
	d.s.persist(j)
	d.ended[j.id] = j
}

// jobUnitsFinished runs when the core has every unit of j: assemble the
// result off the loop, then mark the job done.
func (d *dispatcher) jobUnitsFinished(j *jobRun) {
	j.mu.Lock()
	state := j.state
	j.mu.Unlock()
	if isTerminal(state) {
		return // failed or cancelled: nothing to assemble
	}
	j.assembling = true
	a := assembly{tiles: j.tiles, format: j.format, bounds: j.bounds}
	d.s.wg.Go(func() {
		result, err := d.s.assemble(j, a)
		d.post(func() { d.finish(j, result, err) })
	})
}

func (d *dispatcher) finish(j *jobRun, result string, err error) {
	j.assembling = false
	j.mu.Lock()
	if isTerminal(j.state) {
		j.mu.Unlock()
		return
	}
	j.state, j.result, j.finishedAt = api.JobDone, result, time.Now()
	if err != nil {
		j.state, j.errText = api.JobFailed, "assembling the result: "+err.Error()
	}
	j.changed()
	j.mu.Unlock()
	d.log.Info("job finished", "job", j.id, "state", j.state, "units", len(j.units))
	d.s.persist(j)
	d.ended[j.id] = j
}

// forgetEnded drops terminal jobs with nothing in flight from the core and
// releases their inputs; the job's status stays with the server.
func (d *dispatcher) forgetEnded() {
	for id, j := range d.ended {
		if _, known := d.core.Progress(id); known && !d.core.Forget(id) {
			continue // results still in flight
		}
		delete(d.ended, id)
		delete(d.jobs, id)
		j.inputs, j.tiles = nil, nil
	}
}

// addJob hands a validated, split job to the core.
func (d *dispatcher) addJob(j *jobRun) error {
	units := make([]scheduler.Unit, len(j.inputs))
	for i := range units {
		units[i] = scheduler.Unit{Index: i, Op: j.spec.Op}
	}
	speculate := j.spec.Policy == "dynamic" || j.spec.Policy == "speed"
	if j.spec.Speculate != nil {
		speculate = *j.spec.Speculate
	}
	out, err := d.core.Step(time.Now(), scheduler.JobAdded{Job: j.id, Policy: j.spec.Policy,
		Speculate: speculate, Units: units})
	if err != nil {
		return err
	}
	d.jobs[j.id] = j
	d.s.persist(j) // before any later state of the job is queued
	d.apply(out)
	d.refresh(j)
	d.sendWants()
	return nil
}

func (d *dispatcher) cancel(j *jobRun) error {
	if j.assembling {
		return fmt.Errorf("%w: job %s has all its units and is assembling its result", errConflict, j.id)
	}
	j.mu.Lock()
	if isTerminal(j.state) {
		state := j.state
		j.mu.Unlock()
		return fmt.Errorf("%w: job %s is already %s", errConflict, j.id, state)
	}
	j.state, j.finishedAt = api.JobCancelled, time.Now()
	j.mu.Unlock()
	d.step(scheduler.JobCancelled{Job: j.id})
	d.refresh(j)
	d.s.persist(j)
	d.ended[j.id] = j
	return nil
}

func (d *dispatcher) onTick(now time.Time) {
	d.apply(d.core.Tick(now))
	d.forgetEnded()
	d.sendWants()
	for _, w := range d.workers {
		if w.state != api.WorkerDown && now.Sub(w.lastSeen) > d.s.cfg.HeartbeatTimeout {
			d.log.Warn("worker missed its heartbeats; taking its units back", "worker", w.info.Name,
				"silent_for", now.Sub(w.lastSeen).Round(time.Millisecond))
			d.workerDown(w, errors.New("heartbeat timeout"))
			w.state = api.WorkerDown
		}
	}
}

package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/wire"
)

// The dispatch loop's job and unit paths: a job comes in (addJob), its
// units go out (send) and come back (unitFinished, accept), and it ends
// (failJob, cancel, finish → endJob) and is forgotten (forgetEnded).
// Every accepted unit's record and every terminal state go to state.db
// through the group-commit writer; a terminal state reaches clients only
// once it is on disk.

// addJob hands a job, already durable and visible to clients, to the core.
// Units already done (a resumed job) are never placed again; a job whose
// units are all done goes straight to assembly.
func (d *dispatcher) addJob(j *jobRun) {
	speculate := j.spec.Policy == "dynamic" || j.spec.Policy == "speed"
	if j.spec.Speculate != nil {
		speculate = *j.spec.Speculate
	}
	ev := scheduler.JobAdded{Job: j.id, Policy: j.spec.Policy, Speculate: speculate}
	if j.alike() {
		ev.Repeat = d.repeatOf(j)
	} else {
		ev.Units = d.unitsOf(j)
		if j.spec.InputJob != "" && !d.addInputJob(j, ev.Units) {
			return
		}
	}
	out, err := d.core.Step(time.Now(), ev)
	if err != nil { // validated at submit; only a bug gets here
		d.log.Error("scheduler refused a job", "job", j.id, "err", err)
		d.endJob(j, api.JobFailed, "the scheduler refused the job: "+err.Error(), "")
		return
	}
	d.jobs[j.id] = j
	j.ahead = d.s.startReadAhead(j)
	d.apply(out)
	d.refresh(j)
	d.sendWants()
}

// repeatOf describes a job of alike units to the core without a record
// per unit: their count, operation and size, and the runs of units a
// resumed job has done.
func (d *dispatcher) repeatOf(j *jobRun) scheduler.Repeat {
	r := scheduler.Repeat{Op: d.s.schedOp(j.spec)}
	j.mu.Lock()
	defer j.mu.Unlock()
	r.Count, r.Size = j.progress.Total, j.inputSizeLocked(0)
	j.settled.spans(func(from, to int) {
		r.Done = append(r.Done, scheduler.Span{From: from, To: to})
		j.stored += to - from // a resumed job's: read from state.db
	})
	return r
}

// unitsOf lists a job's units to the core one by one.
func (d *dispatcher) unitsOf(j *jobRun) []scheduler.Unit {
	units := make([]scheduler.Unit, j.total())
	op := d.s.schedOp(j.spec)
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := range units {
		units[i] = scheduler.Unit{Index: i, Op: op, Done: j.settled.has(i), Size: j.inputSizeLocked(i)}
		if units[i].Done {
			j.stored++ // a resumed job's: read from state.db
		}
	}
	j.inputSizes = nil
	return units
}

// send encodes an assignment and queues it on the worker's stream, or
// parks it while the admission bound holds units back (admission.go). A
// unit that cannot be encoded or is too big for a message fails (the job
// with it) rather than holding its window slot for ever.
func (d *dispatcher) send(a scheduler.Assignment) *jobRun {
	if d.draining {
		d.holdBack(a)
		return nil
	}
	j, w := d.jobs[a.Job], d.workers[a.Worker]
	if j == nil || w == nil || w.assoc == nil || a.Stream >= len(w.queues) {
		d.log.Error("assignment to unknown job or worker", "job", a.Job, "worker", a.Worker)
		return nil
	}
	d.nextID++
	id := d.nextID
	f := flight{job: j, index: a.Unit, attempt: a.Attempt, worker: a.Worker, stream: a.Stream, gen: w.gen}
	if d.admit.full(d.unanswered()) {
		f.parked = true
		d.admit.park(id)
	} else {
		msg, err := d.encodeUnit(id, f)
		if err != nil {
			d.unsendable(j, a, w.gen, err)
			return j
		}
		if !d.enqueue(w, a.Stream, msg) {
			return nil
		}
	}
	f.sent = time.Now()
	w.flights = append(w.flights, id)
	d.inflight[id] = f
	d.markSent(j)
	return j
}

// encodeUnit is the message of unit id, the flight f.
func (d *dispatcher) encodeUnit(id uint64, f flight) ([]byte, error) {
	j := f.job
	input, err := d.s.unitInput(j, f.index)
	if err != nil {
		return nil, err
	}
	d.core.SetSize(j.id, f.index, int64(len(input))) // if it was unknown
	u := wire.Unit{ID: id, Job: j.id, Index: f.index, Attempt: f.attempt, Op: j.spec.Op,
		Digest: j.digest, Params: j.params, Input: input}
	msg, err := wire.AppendUnit(getBuf(len(u.Input)+512), &u)
	if err == nil && len(msg) > transport.MaxMessageSize {
		err = fmt.Errorf("a %d-byte unit is over the data plane's %d-byte message limit", len(msg), transport.MaxMessageSize)
	}
	if err != nil {
		putBuf(msg)
		return nil, err
	}
	if d.log.Enabled(context.Background(), slog.LevelDebug) {
		d.log.Debug("unit sent", "job", j.id, "unit", f.index, "attempt", f.attempt, "worker", f.worker,
			"stream", f.stream, "bytes", len(u.Input))
	}
	return msg, nil
}

// markSent records a job's first unit going out.
func (d *dispatcher) markSent(j *jobRun) {
	if j.started {
		return
	}
	j.started = true
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state == api.JobQueued {
		j.state = api.JobRunning
	}
}

// unsendable fails the attempt of a unit the server cannot send, as if
// the worker had reported it failed, so the core frees its window slot.
func (d *dispatcher) unsendable(j *jobRun, a scheduler.Assignment, gen int, err error) {
	d.log.Error("a unit cannot be sent; failing it", "job", j.id, "unit", a.Unit, "worker", a.Worker, "err", err)
	now := time.Now()
	f := flight{job: j, index: a.Unit, attempt: a.Attempt, worker: a.Worker, stream: a.Stream, gen: gen,
		sent: now, unsent: true}
	d.unitFinished(f, resultMsg{worker: a.Worker, gen: gen, stream: a.Stream, returned: now,
		res: wire.Result{Status: wire.StatusFailed, Error: "the server could not send this unit: " + err.Error()}})
}

// unitFinished feeds a result to the core and records it if it counts.
func (d *dispatcher) unitFinished(f flight, r resultMsg) {
	failed := r.res.Status == wire.StatusFailed
	if failed && !f.unsent { // unsendable has said why
		d.log.Warn("unit failed", "job", f.job.id, "unit", f.index, "attempt", f.attempt, "worker", f.worker,
			"reason", r.res.Error)
	} else if !failed && d.log.Enabled(context.Background(), slog.LevelDebug) {
		d.log.Debug("unit result", "job", f.job.id, "unit", f.index, "attempt", f.attempt, "worker", f.worker,
			"compute", r.res.Compute, "round_trip", r.returned.Sub(f.sent))
	}
	ev := scheduler.UnitFinished{Job: f.job.id, Unit: f.index, Worker: f.worker, Stream: f.stream,
		Attempt: f.attempt, Failed: failed, Queued: r.res.Queued, Compute: r.res.Compute}
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

// accept records a counted result in the job's unit statistics and queues
// the unit's record for state.db (committed with the next group).
func (d *dispatcher) accept(f flight, r resultMsg, failed bool) {
	if w := d.workers[f.worker]; w != nil && !f.unsent {
		w.unitsDone++
		d.countsShown = false // the next counts pass shows it, even if nothing runs by then
	}
	if failed {
		d.s.metrics.unitsFailed.Inc()
	} else {
		d.s.metrics.unitsDone.Inc()
	}
	if !f.unsent {
		d.s.metrics.observeUnit(f, r)
	}
	j := f.job
	rec := statedb.Unit{Stream: uint16(f.stream), Attempts: uint16(min(f.attempt, 1<<16-1)), State: statedb.UnitDone,
		Sent: f.sent.UnixNano(), Returned: r.returned.UnixNano(), Queued: int64(r.res.Queued), Compute: int64(r.res.Compute),
		Output: statedb.ParseID(r.output)}
	errText := ""
	if failed {
		rec.State, errText = statedb.UnitFailed, r.res.Error
	}
	j.mu.Lock()
	if j.settled == nil {
		j.mu.Unlock()
		return
	}
	j.settled.add(f.index)
	if !failed {
		j.pendingOut[f.index] = rec.Output
	}
	j.perWorker[f.worker]++
	if r.returned.After(j.lastResult) {
		j.lastResult = r.returned
	}
	j.mu.Unlock()
	if !failed {
		d.releaseDownstream(j, f.index, rec.Output, r.size)
	}
	c := statedb.PutUnit(j.id, f.index, rec, f.worker, errText)
	if !failed {
		i := f.index
		c = c.Lazily(func(err error) { j.storedOne(i, err) })
	}
	d.s.db.Queue(c)
	if failed && j.end == "" {
		what := fmt.Sprintf("unit %d failed on worker %s", f.index, f.worker)
		if f.unsent {
			what = fmt.Sprintf("unit %d could not be sent to worker %s", f.index, f.worker)
		}
		d.failJob(j, what+": "+r.res.Error)
	}
}

// failJob stops a job whose unit failed: the other units would be wasted.
func (d *dispatcher) failJob(j *jobRun, errText string) {
	d.endJob(j, api.JobFailed, errText, "")
	d.step(scheduler.JobCancelled{Job: j.id})
}

// cancel ends a job at a client's request. The returned channel yields
// once the cancellation is on disk (or could not be written).
func (d *dispatcher) cancel(j *jobRun) (<-chan error, error) {
	if j.assembling {
		return nil, conflict("job %s has all its units and is assembling its result", j.id)
	}
	if j.end != "" {
		return nil, conflict("job %s is already %s", j.id, j.end)
	}
	// End the job first: the core reports a cancelled job as having all
	// its units, and jobUnitsFinished must see that it ended rather than
	// assemble it (then a second cancel was told it was assembling).
	durable := d.endJob(j, api.JobCancelled, "", "")
	if _, known := d.core.Progress(j.id); known {
		d.step(scheduler.JobCancelled{Job: j.id})
	}
	return durable, nil
}

// jobUnitsFinished runs when the core has every unit of j: assemble the
// result off the loop, then finish.
func (d *dispatcher) jobUnitsFinished(j *jobRun) {
	if j.end != "" {
		return // failed or cancelled: nothing to assemble
	}
	j.assembling = true
	d.assembling++
	a := assembly{inputs: slices.Clone(j.inputs), tiles: j.tiles, format: j.format, bounds: j.bounds}
	d.s.wg.Go(func() {
		result, err := d.s.assemble(j, a)
		if err == nil {
			// Named at once: the loop and the job's record may take longer
			// than the collector's grace to name it (gc.go).
			j.holdResult(result)
		}
		d.post(func() { d.finish(j, result, err) })
	})
}

func (d *dispatcher) finish(j *jobRun, result string, err error) {
	j.assembling = false
	d.assembling--
	if j.end != "" {
		return
	}
	if err != nil {
		d.endJob(j, api.JobFailed, "assembling the result: "+err.Error(), "")
		return
	}
	d.endJob(j, api.JobDone, "", result)
}

// endJob decides j's terminal state and queues its record behind the
// records of its accepted units. Clients see the state once it is on disk
// (publish); the returned channel yields then, with the write's error.
func (d *dispatcher) endJob(j *jobRun, state, errText, result string) <-chan error {
	d.refresh(j)
	j.end = state
	defer d.upstreamEnded(j, state)
	d.ended[j.id] = j
	rec := j.record(state, errText, result, time.Now())
	durable := make(chan error, 1)
	d.s.db.Queue(statedb.PutJob(rec).Then(func(err error) {
		j.publish(rec)
		d.s.retained(j)
		durable <- err
	}))
	p := rec.Progress
	switch state {
	case api.JobFailed:
		d.log.Warn("job failed", "job", j.id, "reason", errText, "units", p.Total, "done", p.Done,
			"failed", p.Failed, "cancelled", p.Cancelled)
	case api.JobCancelled:
		d.log.Info("job cancelled", "job", j.id, "units", p.Total, "done", p.Done, "cancelled", p.Cancelled)
	default:
		d.log.Info("job done", "job", j.id, "units", p.Total, "result", result)
	}
	return durable
}

// countRunning estimates, by job id, how many units execute on a worker
// thread now (api.Progress.Running). A worker runs a server's units in the
// order they arrive, on as many threads as its lease (docs/leases.md), so
// on each worker the oldest min(in flight, lease) units run, or are about
// to (on the wire to a free thread, or their result on its way back); the
// rest wait in the worker's queue; a unit the admission bound parks
// (admission.go) is not on the worker at all. Flight ids grow with every send, so the
// oldest have the smallest. A unit with copies running on two workers
// (speculation) counts once. It looks at every worker, so the loop counts
// only every countsEvery and publishes the answer for every page
// (views.go): a dashboard polling ten times a second, or many clients,
// cost one pass.
func (d *dispatcher) countRunning() map[string]int {
	type unit struct {
		job   string
		index int
	}
	seen := map[unit]bool{}
	out := map[string]int{}
	for _, w := range d.workers {
		n := 0
		for _, id := range w.flights {
			if n == w.lease {
				break
			}
			f := d.inflight[id]
			if f.parked { // not sent: in the server, not on the worker
				continue
			}
			n++
			if u := (unit{f.job.id, f.index}); !seen[u] {
				seen[u] = true
				out[u.job]++
			}
		}
	}
	return out
}

// forgetEnded drops terminal jobs with nothing in flight from the core and
// releases their inputs; the job's status stays with the server.
func (d *dispatcher) forgetEnded() {
	for id, j := range d.ended {
		if j.assembling {
			continue
		}
		if _, known := d.core.Progress(id); known && !d.core.Forget(id) {
			continue // results still in flight
		}
		delete(d.ended, id)
		delete(d.jobs, id)
		j.ahead.stop()
		j.input, j.tiles, j.ahead = nil, nil, nil
		j.mu.Lock() // the collector reads inputs (walkRefs)
		j.inputs = nil
		j.mu.Unlock()
	}
}

package scheduler

// unitFinished counts a result at most once. A result is Dropped when its
// job or unit is unknown, when no copy of the unit is in flight on that
// worker stream with that Attempt (the worker was declared down, or the
// copy was requeued),
// when the job was cancelled, or when another copy's result was already
// accepted. A matching copy frees its window slot whether it is accepted or
// dropped. Dependents of a failed unit cannot run; they fail with it and
// are reported as Accepted results with Failed set and no Worker.
func (c *Core) unitFinished(ev UnitFinished, out *Output) {
	j := c.jobs[ev.Job]
	if j == nil || ev.Unit < 0 || ev.Unit >= j.n {
		out.Dropped = append(out.Dropped, ev)
		return
	}
	r := j.run(ev.Unit)
	if r == nil {
		out.Dropped = append(out.Dropped, ev)
		return
	}
	a, ok := r.dropCopy(ev)
	if !ok {
		out.Dropped = append(out.Dropped, ev)
		return
	}
	defer j.dropRun(ev.Unit, &c.spareRuns)
	j.copies--
	w := a.worker
	w.inflight[ev.Stream]--
	w.release(ref{j, ev.Unit})
	w.delivered(c.now)
	observed := !ev.Failed && w.observe(ev.Compute)
	c.refresh(w)
	if observed {
		defer c.replanSpeed()
	}
	if !j.active() || j.state(ev.Unit) != unitRunning {
		out.Dropped = append(out.Dropped, ev)
		return
	}
	out.Accepted = append(out.Accepted, ev)
	if !ev.Failed && ev.Compute > 0 {
		j.computes.add(int64(ev.Compute))
		j.nets.add(int64(max(c.now.Sub(a.sent)-ev.Queued-ev.Compute, 0)))
	}
	for _, d := range j.finish(ev.Unit, ev.Failed) {
		out.Accepted = append(out.Accepted, UnitFinished{Job: j.name, Unit: d, Failed: true})
	}
	if j.finished {
		c.retire(j)
		out.JobsDone = append(out.JobsDone, j.name)
		return
	}
	c.wake(j)
}

// unitReturned takes back a copy the worker handed back unrun; the unit is
// pending again unless another copy is in flight.
func (c *Core) unitReturned(ev UnitReturned) {
	j := c.jobs[ev.Job]
	if j == nil || ev.Unit < 0 || ev.Unit >= j.n {
		return
	}
	r := j.run(ev.Unit)
	if r == nil {
		return
	}
	a, ok := r.dropCopy(UnitFinished{Worker: ev.Worker, Stream: ev.Stream, Attempt: ev.Attempt})
	if !ok {
		return
	}
	j.copies--
	w := a.worker
	w.inflight[ev.Stream]--
	w.release(ref{j, ev.Unit})
	c.refresh(w)
	if len(r.copies) > 0 || j.state(ev.Unit) != unitRunning || !j.active() {
		j.dropRun(ev.Unit, &c.spareRuns)
		return
	}
	j.setPending(ev.Unit, true, unitPending)
	if s := j.queueOf(ev.Unit).share; s != nil {
		s.pool++
	}
	c.wake(j)
}

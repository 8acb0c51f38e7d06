package scheduler

import "slices"

// Demand is how many of the worker's streams this server could keep busy
// now: the units in flight there plus the pending units of live jobs whose
// operation it runs, capped at its association's stream count and at the
// units its byte budget lets it hold (at least those in flight); zero for a
// worker that is not up. A worker shared by several servers lends its
// threads by this figure (see WorkerLease). Units waiting for their
// dependencies count too, so the figure errs towards asking. It costs
// O(streams + operations it runs): the pending units are counted per
// operation as they change.
func (c *Core) Demand(name string) int {
	w := c.workers[name]
	if w == nil || !w.up {
		return 0
	}
	n := c.InFlight(name)
	for _, m := range w.opm {
		n += m.x.demand // held units cannot run yet: not counted
	}
	if b := w.byteBudget(); b > 0 && w.avgSize > 0 {
		// No more streams than the units the byte budget lets it hold.
		n = min(n, max(c.InFlight(name), int(float64(b)/w.avgSize), 1))
	}
	return min(n, len(w.inflight))
}

// SetSize records the input size of a unit whose size was unknown (0) when
// its job was added, now that its owner has read the input to send it
// (units on another job's outputs that existed before): its copies in
// flight count against their workers' byte budgets from now on. A size
// already known, or not positive, is ignored. It is not an event: it
// places nothing.
func (c *Core) SetSize(job string, index int, size int64) {
	j := c.jobs[job]
	if j == nil || index < 0 || index >= j.n || size <= 0 || j.sizeOf(index) != 0 {
		return
	}
	j.setSize(index, size)
	if r := j.run(index); r != nil {
		for _, cp := range r.copies {
			if w := cp.worker; w.up && slices.Contains(w.held, ref{j, index}) {
				w.sized(size)
				c.refresh(w)
			}
		}
	}
}

// Bytes is the input bytes in flight to the worker and its byte budget
// (0: none; see "Byte budgets"); zeros for a worker that is not up.
func (c *Core) Bytes(name string) (inFlight, budget int64) {
	w := c.workers[name]
	if w == nil || !w.up {
		return 0, 0
	}
	return w.bytes, w.byteBudget()
}

// InFlight is how many units the worker holds: sent and not yet answered
// (including those on streams no longer leased); zero for a worker that is
// not up.
func (c *Core) InFlight(name string) int {
	w := c.workers[name]
	if w == nil || !w.up {
		return 0
	}
	n := 0
	for _, k := range w.inflight {
		n += k
	}
	return n
}

// BusyStreams is how many of the worker's streams hold a unit, sent and
// not yet answered: the worker's threads busy with this core's units (a
// stream's window may hold more than the one it runs); zero for a worker
// that is not up.
func (c *Core) BusyStreams(name string) int {
	w := c.workers[name]
	if w == nil || !w.up {
		return 0
	}
	n := 0
	for _, k := range w.inflight {
		if k > 0 {
			n++
		}
	}
	return n
}

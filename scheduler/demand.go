package scheduler

// Demand is how many of the worker's streams this server could keep busy
// now: the units in flight there plus the pending units of live jobs whose
// operation it runs, capped at its association's stream count; zero for a
// worker that is not up. A worker shared by several servers lends its
// threads by this figure (see WorkerLease). Units waiting for their
// dependencies count too, so the figure errs towards asking. It costs
// O(streams + live jobs × their operations).
func (c *Core) Demand(name string) int {
	w := c.workers[name]
	if w == nil || !w.up {
		return 0
	}
	n := c.InFlight(name)
	for _, j := range c.live {
		if n >= len(w.inflight) {
			break
		}
		for _, q := range j.ops {
			if w.has(q.op) {
				n += q.pending - q.held // held units cannot run yet
			}
		}
	}
	return min(n, len(w.inflight))
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

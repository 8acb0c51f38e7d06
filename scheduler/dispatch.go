package scheduler

import (
	"cmp"
)

// dispatch places every placeable unit it can: jobs in arrival order, a
// job's units in index order, each on a stream with window room of an up
// worker that can run its operation, as the job's policy allows.
func (c *Core) dispatch(out *Output) {
	for _, j := range c.all {
		if !c.anyRoom() {
			return
		}
		if !j.active() || j.pending == 0 {
			continue
		}
		for i := range j.units {
			if j.placeable(i) {
				c.place(j, i, out)
			}
		}
	}
}

func (c *Core) anyRoom() bool {
	for _, n := range c.names {
		if w := c.workers[n]; w.up && w.freeStream() >= 0 {
			return true
		}
	}
	return false
}

// place sends unit i of j to the best allowed worker with room, if any. A
// static policy's shares are planned here, the first time a unit of the
// operation is placed while some capable worker is up.
func (c *Core) place(j *job, i int, out *Output) {
	op := j.units[i].Op
	ws := c.capable(op)
	if len(ws) == 0 {
		return
	}
	s := j.shares[op]
	if s == nil {
		if wts := j.policy.weights(c, ws); wts != nil {
			s = j.planShares(op, ws, wts)
		}
	}
	w := c.pick(ws, func(w *worker) bool { return s == nil || s.allows(w.name) })
	if w == nil {
		return
	}
	if s != nil {
		s.take(w.name)
	}
	c.send(j, i, w, w.freeStream(), false, out)
}

// capable lists the up workers that can run op, by name.
func (c *Core) capable(op string) []*worker {
	var ws []*worker
	for _, n := range c.names {
		if w := c.workers[n]; w.can(op) {
			ws = append(ws, w)
		}
	}
	return ws
}

// pick chooses among the allowed workers with window room: the one whose
// freest stream is least loaded (so every stream gets a unit before any
// gets a second), then the faster per stream, then by name.
func (c *Core) pick(ws []*worker, allowed func(*worker) bool) *worker {
	var best *worker
	var bestSpeed float64
	for _, w := range ws {
		if w.freeStream() < 0 || !allowed(w) {
			continue
		}
		speed := c.estRate(w) / float64(len(w.inflight))
		if best == nil || cmp.Or(cmp.Compare(w.depth(), best.depth()), cmp.Compare(bestSpeed, speed)) < 0 {
			best, bestSpeed = w, speed
		}
	}
	return best
}

// send records a copy of unit i in flight on (w, stream) and emits it.
func (c *Core) send(j *job, i int, w *worker, stream int, spec bool, out *Output) {
	u := &j.units[i]
	u.attempts++
	u.copies = append(u.copies, attempt{worker: w.name, stream: stream, n: u.attempts,
		spec: spec, sent: c.now, ahead: w.inflight[stream]})
	w.inflight[stream]++
	if !spec {
		u.state = unitRunning
		j.pending--
	}
	out.Assign = append(out.Assign, Assignment{Job: j.name, Unit: i, Worker: w.name,
		Stream: stream, Attempt: u.attempts, Speculative: spec})
}

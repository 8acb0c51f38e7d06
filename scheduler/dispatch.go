package scheduler

import (
	"cmp"
	"slices"
	"time"
)

// dispatch places every placeable unit it can: jobs in arrival order, a
// job's units in index order, each on a stream with window room of an up
// worker that can run its operation, as the job's policy allows.
//
// A job's placeable units wait in per-operation heaps (opQueue), so a
// pass costs O(log n) per unit placed plus O(operations) per job. Once a
// unit of an operation cannot be placed, none of that operation can in
// the same pass (room only shrinks), so the operation is skipped.
func (c *Core) dispatch(out *Output) {
	c.pass++
	for _, w := range c.byName {
		w.reserved = false
	}
	for _, j := range c.live {
		if !c.anyRoom() {
			return
		}
		for q := j.next(c.pass); q != nil; q = j.next(c.pass) {
			if !c.place(j, q, out) {
				q.tried = c.pass
			}
		}
	}
}

// next returns the operation whose lowest placeable unit comes first, of
// those not yet failed in this pass; nil if there is none.
func (j *job) next(pass int) *opQueue {
	var best *opQueue
	for _, q := range j.ops {
		if q.tried != pass && q.ready.len() > 0 && (best == nil || q.ready.min() < best.ready.min()) {
			best = q
		}
	}
	return best
}

func (c *Core) anyRoom() bool {
	for _, w := range c.byName {
		if w.up && w.freeStream() >= 0 {
			return true
		}
	}
	return false
}

// place sends the first placeable unit of q to the best allowed worker
// with room, and reports whether it could. A static policy's shares are
// planned here, the first time a unit of the operation is placed while
// some capable worker is up.
func (c *Core) place(j *job, q *opQueue, out *Output) bool {
	ws := c.capable(q)
	if len(ws) == 0 {
		return false
	}
	s := q.share
	if s == nil {
		if wts := j.policy.weights(c, ws); wts != nil {
			s = q.planShares(ws, wts)
		}
	}
	size := j.units[q.ready.min()].Size
	w := c.pick(ws, s, size)
	if w == nil {
		reserve(ws, s, size)
		return false
	}
	if s == nil {
		if ok, best := worthPlacing(w, ws, size); !ok {
			if best != nil && !best.fits(size) {
				best.reserved = true // it must drain first: keep its room for this unit
			}
			return false
		}
	}
	if s != nil {
		s.take(w.name)
	}
	c.send(j, q.ready.pop(), w, w.freeStream(), false, out)
	return true
}

// capable lists the up workers that can run q's operation, by name. The
// list is cached until a worker comes up or goes down; callers must not
// modify it.
func (c *Core) capable(q *opQueue) []*worker {
	if q.wsGen == c.gen {
		return q.ws
	}
	q.ws, q.wsGen = c.capableOf(q.op), c.gen
	return q.ws
}

// capableOf lists the up workers that can run op, by name.
func (c *Core) capableOf(op string) []*worker {
	var ws []*worker
	for _, w := range c.byName {
		if w.can(op) {
			ws = append(ws, w)
		}
	}
	return ws
}

// pick chooses, for a unit of size bytes, among the workers with window
// room and byte budget for it that share s allows (all of them if s is
// nil): the one whose freest stream is least loaded (so every stream gets
// a unit before any gets a second), then the faster per stream, then by
// name. Without shares, once every worker is measured, it is instead the
// one that would finish the unit first.
func (c *Core) pick(ws []*worker, s *opShare, size int64) *worker {
	if s == nil && allMeasured(ws) {
		return earliestFinish(ws, true, size)
	}
	var best *worker
	var bestSpeed float64
	for _, w := range ws {
		if w.roomFor(size) < 0 || (s != nil && !s.allows(w.name)) {
			continue
		}
		speed := c.estRate(w) / w.parallel()
		if best == nil || cmp.Or(cmp.Compare(w.depth(), best.depth()), cmp.Compare(bestSpeed, speed)) < 0 {
			best, bestSpeed = w, speed
		}
	}
	return best
}

// reserve marks the workers that share s allows and that have window room,
// but not byte budget, for a unit of size bytes: later units of the pass
// may not take their room, so that they drain until it fits (else a big
// unit could wait for ever behind a later job's small ones).
func reserve(ws []*worker, s *opShare, size int64) {
	for _, w := range ws {
		if w.freeStream() >= 0 && !w.fits(size) && (s == nil || s.allows(w.name)) {
			w.reserved = true
		}
	}
}

func allMeasured(ws []*worker) bool {
	for _, w := range ws {
		if _, ok := w.estUnitTime(); !ok {
			return false
		}
	}
	return true
}

// finish is when a unit given to w now would be done, from now: the units
// ahead of it on w's least loaded stream, and itself, each taking w's unit
// time. With room, only streams with window room count, and only if a unit
// of size bytes fits the byte budget.
func finish(w *worker, room bool, size int64) (time.Duration, bool) {
	s := w.roomFor(size)
	if !room && w.lease > 0 {
		s = slices.Index(w.leased(), slices.Min(w.leased()))
	}
	t, ok := w.estUnitTime()
	if !room && ok && w.lease > 0 && !w.fits(size) {
		// It must drain before the unit fits: after its busiest stream.
		return time.Duration(slices.Max(w.inflight)+1) * t, true
	}
	if s < 0 || !ok {
		return 0, false
	}
	return time.Duration(w.inflight[s]+1) * t, true
}

// earliestFinish is the worker of ws that would finish a unit of size bytes
// given now first (by name on ties); with room, only workers with room for
// it count.
func earliestFinish(ws []*worker, room bool, size int64) *worker {
	var best *worker
	var bestT time.Duration
	for _, w := range ws {
		if t, ok := finish(w, room, size); ok && (best == nil || t < bestT) {
			best, bestT = w, t
		}
	}
	return best
}

// worthPlacing reports whether giving the next unit to w now, rather than
// holding it for a faster worker whose window is full, gets it done no
// later. A slow worker thus takes units while the faster ones are busy,
// but not the last ones, which a faster worker would finish sooner even
// after the units it already holds. Unmeasured workers always take units,
// so that they get measured. When it is not worth it, it also returns the
// worker that would do better.
func worthPlacing(w *worker, ws []*worker, size int64) (bool, *worker) {
	if !allMeasured(ws) {
		return true, nil
	}
	tw, _ := finish(w, true, size)
	best := earliestFinish(ws, false, size)
	tb, _ := finish(best, false, size)
	return tw <= tb, best
}

// send records a copy of unit i in flight on (w, stream) and emits it.
func (c *Core) send(j *job, i int, w *worker, stream int, spec bool, out *Output) {
	u := &j.units[i]
	u.attempts++
	u.copies = append(u.copies, attempt{worker: w.name, stream: stream, n: u.attempts,
		spec: spec, sent: c.now, ahead: w.inflight[stream]})
	j.copies++
	w.inflight[stream]++
	w.hold(ref{j, i})
	if !spec {
		j.setPending(i, false, unitRunning)
	}
	out.Assign = append(out.Assign, Assignment{Job: j.name, Unit: i, Worker: w.name,
		Stream: stream, Attempt: u.attempts, Speculative: spec})
}

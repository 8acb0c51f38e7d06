package scheduler

import (
	"slices"
	"time"
)

// dispatch places every placeable unit it can: jobs in arrival order, a
// job's units in index order, each on a stream with window room of an up
// worker that can run its operation, as the job's policy allows.
//
// Only jobs with placeable units are visited (Core.placeable), and a
// job's placeable units wait in per-operation sets (opQueue), so a pass
// costs O(log n) per unit placed plus O(operations) per such job, and the
// finder's cost per unit (find.go). Once a unit of an operation cannot be
// placed, none of that operation can in the same pass (room only shrinks),
// so the operation is skipped.
func (c *Core) dispatch(out *Output) {
	c.pass++
	c.unreserve()
	kept := c.placeable[:0]
	for k, j := range c.placeable {
		if !j.active() || !j.hasReady() {
			j.placeable = false
			continue
		}
		if !c.find.anyRoom(c) {
			kept = append(kept, c.placeable[k:]...)
			break
		}
		for q := j.next(c.pass); q != nil; q = j.next(c.pass) {
			if !c.place(j, q, out) {
				q.tried = c.pass
			}
		}
		if j.hasReady() {
			kept = append(kept, j)
		} else {
			j.placeable = false
		}
	}
	clear(c.placeable[len(kept):])
	c.placeable = kept
}

// wake lists j among the jobs dispatch visits, if it has placeable units.
func (c *Core) wake(j *job) {
	if j.placeable || !j.active() || !j.hasReady() {
		return
	}
	j.placeable = true
	k, _ := slices.BinarySearchFunc(c.placeable, j.seq, func(o *job, seq int) int { return o.seq - seq })
	c.placeable = slices.Insert(c.placeable, k, j)
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

// place sends the first placeable unit of q to the best allowed worker
// with room, and reports whether it could. A static policy's shares are
// planned here, the first time a unit of the operation is placed while
// some capable worker is up.
func (c *Core) place(j *job, q *opQueue, out *Output) bool {
	x := q.x
	if len(x.members) == 0 {
		return false
	}
	s := q.share
	if s == nil && j.policy.plans() {
		ws := c.find.capable(c, x)
		s = q.planShares(ws, j.policy.weights(c, ws))
		c.indexShare(s, ws)
	}
	size := j.sizeOf(q.ready.min())
	w := c.pick(x, s, size)
	if w == nil {
		c.find.reserve(c, x, s, size)
		return false
	}
	if s == nil {
		if ok, best := c.worthPlacing(x, w, size); !ok {
			if best != nil && !c.fits(best, size) {
				c.reserve(best) // it must drain first: keep its room for this unit
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

// pick chooses, for a unit of size bytes, among the workers with window
// room and byte budget for it that share s allows (all of them if s is
// nil): the one whose freest stream is least loaded (so every stream gets
// a unit before any gets a second), then the faster per stream, then by
// name. Without shares, once every worker is measured, it is instead the
// one that would finish the unit first.
func (c *Core) pick(x *opIndex, s *opShare, size int64) *worker {
	if s == nil && c.find.allMeasured(c, x) {
		return c.find.earliest(c, x, true, size)
	}
	return c.find.bestRoom(c, x, s, size)
}

// finish is when a unit given to w now would be done, from now: the units
// ahead of it on w's least loaded stream, and itself, each taking w's unit
// time. With room, only streams with window room count, and only if a unit
// of size bytes fits the byte budget.
func (c *Core) finish(w *worker, room bool, size int64) (time.Duration, bool) {
	s := c.roomFor(w, size)
	if !room && w.lease > 0 {
		s = slices.Index(w.leased(), slices.Min(w.leased()))
	}
	t, ok := w.estUnitTime()
	if !room && ok && w.lease > 0 && !c.fits(w, size) {
		// It must drain before the unit fits: after its busiest stream.
		return time.Duration(slices.Max(w.inflight)+1) * t, true
	}
	if s < 0 || !ok {
		return 0, false
	}
	return time.Duration(w.inflight[s]+1) * t, true
}

// worthPlacing reports whether giving the next unit to w now, rather than
// holding it for a faster worker whose window is full, gets it done no
// later. A slow worker thus takes units while the faster ones are busy,
// but not the last ones, which a faster worker would finish sooner even
// after the units it already holds. Unmeasured workers always take units,
// so that they get measured. When it is not worth it, it also returns the
// worker that would do better.
func (c *Core) worthPlacing(x *opIndex, w *worker, size int64) (bool, *worker) {
	if !c.find.allMeasured(c, x) {
		return true, nil
	}
	tw, _ := c.finish(w, true, size)
	best := c.find.earliest(c, x, false, size)
	tb, _ := c.finish(best, false, size)
	return tw <= tb, best
}

// send records a copy of unit i in flight on (w, stream) and emits it.
func (c *Core) send(j *job, i int, w *worker, stream int, spec bool, out *Output) {
	r := j.runFor(i, &c.spareRuns)
	r.attempts++
	r.copies = append(r.copies, attempt{worker: w, stream: stream, n: r.attempts,
		spec: spec, sent: c.now, ahead: w.inflight[stream]})
	j.copies++
	w.inflight[stream]++
	c.sent(w)
	w.hold(ref{j, i})
	if !spec {
		j.setPending(i, false, unitRunning)
		j.flew(i, r.attempts, c.now)
	}
	c.refresh(w)
	out.Assign = append(out.Assign, Assignment{Job: j.name, Unit: i, Worker: w.name,
		Stream: stream, Attempt: r.attempts, Speculative: spec})
}

package scheduler

import (
	"cmp"
	"slices"
	"time"
)

// speculate issues end-of-job duplicates, for jobs with Speculate set. A
// job qualifies once it has no pending unit. Its units with a single copy
// in flight are taken oldest send first; each may get one duplicate
// (Speculative, next Attempt) on an idle stream (nothing in flight) of
// another capable worker — the fastest such — when either
//
//   - the copy is a straggler: in flight (on the way, queued on the worker
//     or running) for at least SpeculateAfter times the job's median unit
//     compute time plus twice its median time on the network, or
//   - both workers are measured and the idle one would finish sooner than
//     the copy's expected finish (sent + (units ahead + 1) × unit time),
//
// and the idle worker is not known to be slower than the copy's worker.
// The first result wins; the other is Dropped when it comes back and frees
// its slot then. Only idle streams are used, and dispatch runs first, so
// speculation never delays another job's units.
//
// A unit's time on the network (from its send to its result, less the time
// it waited in the worker's queue and ran) is in the straggler's bar twice:
// a duplicate moves the unit's bytes again, so it can only win when the
// copy is late by more than that, and copies sent together over a shared
// path finish together: the first result is no sign that the others are
// slow. With the compute time alone in the bar, a job of data-heavy units
// (16 MiB each, 20 µs of compute) put a duplicate of a unit still in
// flight on each stream that fell idle from its first result on, 16 MiB
// more through the very link they were all waiting on
// (docs/architecture.md, "Assignment policies and speculation").
func (c *Core) speculate(out *Output) {
	for _, j := range c.speculating {
		if j.pending > 0 || !j.anyIdle() {
			continue
		}
		after, hasMed := j.stragglerAfter(c.cfg.SpeculateAfter)
		for _, i := range c.find.candidates(c, j) {
			r := j.run(i)
			w := c.find.idle(c, j.queueOf(i).x, r.copies[0].worker, j.sizeOf(i))
			if w != nil && c.worthDuplicating(r.copies[0], w, after, hasMed) {
				r.duplicated = true
				c.send(j, i, w, w.idleStream(), true, out)
			}
		}
	}
}

// anyIdle reports whether some worker that can run one of j's operations
// has an idle stream: else no copy of j's can be placed.
func (j *job) anyIdle() bool {
	for _, q := range j.ops {
		if q.x.idle > 0 {
			return true
		}
	}
	return false
}

// flown is a copy of a speculating job's unit sent (not as a duplicate),
// for the job's speculation candidates.
type flown struct {
	sent time.Time
	unit int32
	n    int32 // its Attempt
}

// flew records a copy of unit i sent at now as attempt n, if the job
// speculates, keeping the record in (sent, unit) order. Records that no
// longer stand for a candidate are dropped as they are found, and when
// they outnumber the copies in flight.
func (j *job) flew(i, n int, now time.Time) {
	if !j.speculate {
		return
	}
	if len(j.flight) > 2*j.copies+64 {
		j.flight = j.candidateFlights(nil)
	}
	f := flown{sent: now, unit: int32(i), n: int32(n)}
	k := len(j.flight)
	for k > 0 && flownBefore(f, j.flight[k-1]) {
		k--
	}
	j.flight = slices.Insert(j.flight, k, f)
}

func flownBefore(a, b flown) bool {
	return cmp.Or(a.sent.Compare(b.sent), cmp.Compare(a.unit, b.unit)) < 0
}

// candidates appends to out j's running units with one copy in flight and
// no duplicate yet, oldest send first, then by index. It looks only at the
// copies sent, not at the whole job.
func (j *job) candidates(out []int) []int {
	j.flight = j.candidateFlights(func(i int) { out = append(out, i) })
	return out
}

// candidateFlights keeps the records of j.flight that stand for a
// candidate, calling each (if set) with their units, in order.
func (j *job) candidateFlights(each func(i int)) []flown {
	kept := j.flight[:0]
	for _, f := range j.flight {
		i := int(f.unit)
		r := j.run(i)
		if r == nil || j.state(i) != unitRunning || len(r.copies) != 1 || r.copies[0].n != int(f.n) || r.duplicated {
			continue
		}
		kept = append(kept, f)
		if each != nil {
			each(i)
		}
	}
	clear(j.flight[len(kept):])
	return kept
}

func (c *Core) worthDuplicating(a attempt, idle *worker, after time.Duration, hasMed bool) bool {
	idleT, idleOK := idle.estUnitTime()
	curT, curOK := a.worker.estUnitTime()
	if idleOK && curOK && idleT > curT {
		return false
	}
	elapsed := c.now.Sub(a.sent)
	if hasMed && elapsed >= after {
		return true
	}
	expected := a.sent.Add(time.Duration(a.ahead+1) * curT)
	return idleOK && curOK && c.now.Add(idleT).Before(expected)
}

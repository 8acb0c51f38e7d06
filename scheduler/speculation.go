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
	for _, j := range c.live {
		if !j.speculate || j.pending > 0 {
			continue
		}
		after, hasMed := j.stragglerAfter(c.cfg.SpeculateAfter)
		for _, i := range c.speculationCandidates(j) {
			u := &j.units[i]
			w, s := c.idleSlot(j.ops[u.oq], u.copies[0].worker, u.Size)
			if w != nil && c.worthDuplicating(u.copies[0], w, after, hasMed) {
				u.duplicated = true
				c.send(j, i, w, s, true, out)
			}
		}
	}
}

// speculationCandidates lists j's running units with one copy and no
// duplicate yet, oldest send first, then by index. It looks only at the
// units in flight on the workers, not at the whole job.
func (c *Core) speculationCandidates(j *job) []int {
	var out []int
	for _, w := range c.byName {
		for _, r := range w.held {
			if r.j != j {
				continue
			}
			if u := &j.units[r.i]; u.state == unitRunning && len(u.copies) == 1 && !u.duplicated {
				out = append(out, r.i)
			}
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		return cmp.Or(j.units[a].copies[0].sent.Compare(j.units[b].copies[0].sent), cmp.Compare(a, b))
	})
	return out
}

// idleSlot finds the fastest up worker other than not that can run q's op,
// has a stream with nothing in flight and byte budget for a unit of size
// bytes; measured workers before unmeasured.
func (c *Core) idleSlot(q *opQueue, not string, size int64) (*worker, int) {
	var best *worker
	for _, w := range c.capable(q) {
		if w.name == not || w.idleStream() < 0 || !w.fits(size) {
			continue
		}
		if best == nil || fasterThan(w, best) {
			best = w
		}
	}
	if best == nil {
		return nil, -1
	}
	return best, best.idleStream()
}

func fasterThan(a, b *worker) bool {
	ta, oka := a.estUnitTime()
	tb, okb := b.estUnitTime()
	if oka != okb {
		return oka
	}
	return cmp.Compare(ta, tb) < 0
}

func (c *Core) worthDuplicating(a attempt, idle *worker, after time.Duration, hasMed bool) bool {
	idleT, idleOK := idle.estUnitTime()
	curT, curOK := c.workers[a.worker].estUnitTime()
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

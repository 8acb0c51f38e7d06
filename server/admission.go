package server

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// Admission. A unit the server has sent is, until its result is read,
// either on a worker or, once answered, a result waiting for the server.
// While the server is the bottleneck (a fleet of fast units) most of them
// wait in the server: each association with a result to read has a
// runnable goroutine, and Go's scheduler runs goroutines first come first
// served, without priorities. A control request (a page of the API, a
// heartbeat) queues behind all of them, for as long as the server takes to
// turn that many units around: 10,000 one-unit workers at 40,000 units/s
// is a quarter of a second. More units in flight than the server turns
// around in a few milliseconds add nothing to its rate then; they only
// lengthen that queue.
//
// So the loop bounds the units sent and not yet answered (limit) by the
// goroutines' wait to run, read from the runtime every adjustEvery: when
// the wait's p99 passes target the bound falls by a quarter (to below the
// units out), and while the bound holds units back and the wait is below
// target it rises by an eighth. A unit the core places beyond the bound is
// parked, and encoded and sent in placement order as results come
// back; to the core it is in flight. A parked unit of a job that has
// ended, and every parked unit once the server drains, is handed back to
// the core unsent instead. A unit's round trip is measured from
// when it is sent, not placed, so that its wait here does not pass for a
// slow path and grow the worker's window.
//
// With nothing in flight the bound is at its floor, and rises from there
// as above: a job's first placement (a unit or two for each of 10,000
// workers) does not go out at once, whose results, coming back together,
// would hold the API for a quarter of a second (docs/scale.md). A server
// that keeps up (units that take time, or fewer workers) never reaches
// the target: it parks units only at a job's start, while the bound rises
// to the units placed (20,000 from 1,000: 26 adjustments, 2.6 s).

// admission is the bound and the parked units; the dispatch loop owns it.
type admission struct {
	target time.Duration // the goroutines' p99 wait above which the bound falls; 0: no bound
	limit  int           // units sent and unanswered at most (noLimit: none)
	floor  int           // the bound never falls below it, and starts at it (minLimit; tests set less)
	parked []uint64      // flights placed and not yet sent, oldest first from head; one no longer in flight is skipped
	head   int
	live   int // parked units whose flights are still parked in d.inflight
	// latency is the goroutines' p99 wait since its previous call and
	// how many waits that was (schedLatency; tests set their own).
	latency func() (time.Duration, uint64)
}

const (
	noLimit = math.MaxInt
	// minLimit is the fewest units the bound lets out: enough that the
	// server's round trip, not the bound, sets the rate.
	minLimit = 1000
	// adjustEvery is how often the bound is adjusted.
	adjustEvery = 100 * time.Millisecond
	// DefaultSchedTarget is Config.SchedTarget's default.
	DefaultSchedTarget = 20 * time.Millisecond
)

func newAdmission(target time.Duration) *admission {
	a := &admission{target: target, limit: noLimit, floor: minLimit}
	if target > 0 {
		l := newSchedLatency()
		a.latency = func() (time.Duration, uint64) { return l.quantile(0.99) }
		a.restart()
	}
	return a
}

// restart puts the bound at its floor. Without a bound (no target) it
// does nothing.
func (a *admission) restart() {
	if a.latency != nil {
		a.limit = a.floor
	}
}

// full reports whether a unit must be parked with out units sent and
// unanswered: the bound is reached, or units are parked already (they
// go first).
func (a *admission) full(out int) bool {
	return a.live > 0 || out >= a.limit
}

// park queues flight id to be sent once the bound allows.
func (a *admission) park(id uint64) {
	a.parked = append(a.parked, id)
	a.live++
}

// next takes the oldest parked flight, or reports false.
func (a *admission) next() (uint64, bool) {
	if a.head == len(a.parked) {
		return 0, false
	}
	p := a.parked[a.head]
	a.head++
	if a.head == len(a.parked) || a.head > 1024 && a.head*2 > len(a.parked) {
		a.parked = a.parked[:copy(a.parked, a.parked[a.head:])]
		a.head = 0
	}
	return p, true
}

// adjust moves the bound by the goroutines' wait since the last call,
// with out units sent and unanswered; it reports whether it read a wait.
func (a *admission) adjust(out int) bool {
	if a.latency == nil {
		return false
	}
	wait, n := a.latency()
	switch {
	case n == 0:
		return false
	case wait > a.target:
		a.limit = max(min(a.limit, out)*3/4, a.floor)
	case a.live > 0:
		a.limit += max(a.limit/8, 1)
	}
	return true
}

// unanswered is how many units are sent and not yet answered.
func (d *dispatcher) unanswered() int { return len(d.inflight) - d.admit.live }

// enqueue hands an encoded unit to its stream's sender. A full queue (a
// bug: queues hold the most units the core places on a stream) ends the
// association.
func (d *dispatcher) enqueue(w *workerConn, stream int, msg []byte) bool {
	select {
	case w.queues[stream] <- msg:
		d.s.metrics.unitsSent.Inc()
		return true
	default:
		putBuf(msg)
		w.assoc.Abort(fmt.Errorf("server: send queue of stream %d overflowed", stream))
		return false
	}
}

// releaseParked sends parked units, oldest first, while the bound allows.
// The loop calls it after every event. A parked unit of a job that has
// ended, or has every unit, is handed back to the core rather than sent;
// while the server drains, every parked unit is (returnParked).
func (d *dispatcher) releaseParked() {
	if d.draining {
		d.returnParked()
		return
	}
	for d.admit.live > 0 && d.unanswered() < d.admit.limit {
		id, f, ok := d.nextParked()
		if !ok {
			return
		}
		if f.job.end != "" || f.job.assembling {
			d.unpark(id, f)
			continue
		}
		w := d.workers[f.worker]
		msg, err := d.encodeUnit(id, f)
		if err != nil {
			d.dropParked(id, f)
			d.unsendable(f.job, scheduler.Assignment{Job: f.job.id, Unit: f.index, Attempt: f.attempt,
				Worker: f.worker, Stream: f.stream}, f.gen, err)
			continue
		}
		f.parked, f.sent = false, time.Now()
		d.inflight[id] = f
		d.enqueue(w, f.stream, msg)
	}
}

// nextParked takes the oldest flight still parked and counts it out of
// live; it reports false once none is. A flight no longer in flight (its
// worker went down; workerDown counted it) is skipped. Should live count
// more flights than are parked (a bug), live is set right and logged.
func (d *dispatcher) nextParked() (uint64, flight, bool) {
	for {
		id, ok := d.admit.next()
		if !ok {
			if d.admit.live != 0 {
				d.log.Error("admission: parked count above the units parked; correcting it", "counted", d.admit.live)
				d.admit.live = 0
			}
			return 0, flight{}, false
		}
		if f, ok := d.inflight[id]; ok && f.parked {
			d.admit.live--
			return id, f, true
		}
	}
}

// returnParked hands every parked unit back to the core as not run: the
// server is draining, and no unit goes out (drain.go).
func (d *dispatcher) returnParked() {
	for d.admit.live > 0 {
		id, f, ok := d.nextParked()
		if !ok {
			return
		}
		d.unpark(id, f)
	}
}

// unpark hands parked flight id back to the core as not run (taken by
// nextParked): its window slot is free, and the unit is pending again
// unless its job has ended or has it already.
func (d *dispatcher) unpark(id uint64, f flight) {
	d.dropParked(id, f)
	d.step(scheduler.UnitReturned{Job: f.job.id, Unit: f.index, Worker: f.worker, Stream: f.stream, Attempt: f.attempt})
	d.refresh(f.job)
}

// dropParked takes flight id (taken by nextParked) out of flight and off
// its worker.
func (d *dispatcher) dropParked(id uint64, f flight) {
	delete(d.inflight, id)
	if w := d.workers[f.worker]; w != nil {
		w.flights = slices.DeleteFunc(w.flights, func(x uint64) bool { return x == id })
	}
}

// adjustAdmission moves the bound every adjustEvery, and puts it at its
// floor when nothing is in flight.
func (d *dispatcher) adjustAdmission(now time.Time) {
	if len(d.inflight) == 0 {
		d.admit.restart()
	}
	if now.Before(d.nextAdjust) {
		return
	}
	d.nextAdjust = now.Add(adjustEvery)
	if old := d.admit.limit; d.admit.adjust(d.unanswered()) && old != d.admit.limit {
		d.log.Debug("admission bound", "units", d.admit.limit, "was", old, "out", d.unanswered(), "held", d.admit.live)
	}
}

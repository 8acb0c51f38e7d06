package server

import (
	"time"

	"github.com/braidhq/braid/scheduler"
)

// A server stops in order: it takes no new job (submit answers 503), places
// no new unit, waits up to Config.DrainTimeout for the results of the units
// in flight and stores them, commits everything to state.db, and only then
// closes its associations. Units still out when the time is up run again
// after the next start.

// drain runs the first steps of a stop (Run calls it when its context
// ends) and returns once nothing is in flight or DrainTimeout passed.
func (s *Server) drain() {
	s.draining.Store(true)
	if s.cfg.DrainTimeout < 0 {
		return
	}
	drained := make(chan struct{})
	if !s.disp.post(func() { s.disp.startDrain(drained) }) {
		return
	}
	timer := time.NewTimer(s.cfg.DrainTimeout)
	defer timer.Stop()
	select {
	case <-drained:
		s.log.Info("drained: no unit in flight")
	case <-timer.C:
		var n int
		_ = s.disp.do(s.ctx, func() { n = len(s.disp.inflight) })
		s.log.Warn("drain timed out; the units still in flight run again after the next start",
			"timeout", s.cfg.DrainTimeout, "in_flight", n)
	}
}

// startDrain stops placing units: every worker lends this server no
// stream from now on (units in flight finish and count), units parked by
// the admission bound and any unit the core places anyway are handed back
// (returnParked, holdBack). drained is closed once no
// unit is in flight and no result is being assembled.
func (d *dispatcher) startDrain(drained chan struct{}) {
	d.draining, d.drained = true, drained
	for name, w := range d.workers {
		if w.assoc != nil {
			d.lendNothing(name)
		}
	}
	d.returnParked() // held back by the admission bound: they run after the next start
	d.sendWants()    // ask for nothing more
	d.checkDrained()
}

// lendNothing takes all of a worker's streams away from placement.
func (d *dispatcher) lendNothing(worker string) {
	if _, err := d.core.Step(time.Now(), scheduler.WorkerLease{Worker: worker, Streams: 0}); err != nil {
		d.log.Debug("drain: lease", "worker", worker, "err", err)
	}
}

// holdBack undoes an assignment made while draining (a worker that came
// up, a lease that grew): the worker lends nothing more, and the unit is
// pending again, for the next start.
func (d *dispatcher) holdBack(a scheduler.Assignment) {
	d.lendNothing(a.Worker)
	out, err := d.core.Step(time.Now(), scheduler.UnitReturned{Job: a.Job, Unit: a.Unit, Worker: a.Worker,
		Stream: a.Stream, Attempt: a.Attempt})
	if err != nil {
		d.log.Error("drain: handing back a unit", "job", a.Job, "unit", a.Unit, "err", err)
		return
	}
	d.apply(out)
}

// checkDrained closes drained once nothing is in flight or assembling.
// The loop calls it after every event.
func (d *dispatcher) checkDrained() {
	if d.drained != nil && len(d.inflight) == 0 && d.assembling == 0 {
		close(d.drained)
		d.drained = nil
	}
}

package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ewmaWeight is the weight of a new compute-time sample in a worker's
// running estimate.
const ewmaWeight = 0.3

// worker is the core's view of one worker association.
type worker struct {
	name     string
	up       bool
	threads  int
	ops      map[string]bool
	inflight []int // units in flight per stream, over all the association's streams
	lease    int   // streams usable now: inflight[:lease] (WorkerLease)
	window   int   // per-stream window, shared by all streams
	held     []ref // the units with a copy in flight here

	unitTime time.Duration // EWMA of reported compute time per unit
	samples  int           // compute-time samples behind unitTime
	fbRate   float64       // last ServiceRate from Feedback (units/s)
}

// WorkerStatus is a snapshot of one worker, for introspection and tests.
type WorkerStatus struct {
	Name     string
	Up       bool
	Window   int
	InFlight []int // per stream
	// Lease is how many streams the worker lends now (WorkerLease).
	Lease int
	// UnitTime is the estimated compute time of one unit on one stream;
	// zero until the worker has been measured.
	UnitTime time.Duration
}

func newWorker(ev WorkerUp, window int) *worker {
	w := &worker{name: ev.Worker, up: true, threads: ev.Threads, window: window,
		ops: make(map[string]bool, len(ev.Ops)), inflight: make([]int, ev.Streams)}
	if w.threads <= 0 {
		w.threads = ev.Streams
	}
	if !ev.AwaitLease {
		w.lease = ev.Streams
	}
	for _, op := range ev.Ops {
		w.ops[op] = true
	}
	return w
}

// ref names one unit of one job.
type ref struct {
	j *job
	i int
}

// release forgets one copy of unit r held here.
func (w *worker) release(r ref) {
	if k := slices.Index(w.held, r); k >= 0 {
		w.held = slices.Delete(w.held, k, k+1)
	}
}

func validateWorkerUp(ev WorkerUp) error {
	if ev.Worker == "" || ev.Streams < 1 || len(ev.Ops) == 0 {
		return fmt.Errorf("%w: %q with %d streams and %d operations", ErrBadWorker, ev.Worker, ev.Streams, len(ev.Ops))
	}
	return nil
}

func (w *worker) can(op string) bool { return w.up && w.has(op) }

// has reports whether the worker runs op; an op of several names joined
// by '+' (a pipeline's) needs every one.
func (w *worker) has(op string) bool {
	for {
		name, rest, more := strings.Cut(op, "+")
		if !w.ops[name] {
			return false
		}
		if !more {
			return true
		}
		op = rest
	}
}

// leased are the streams usable now.
func (w *worker) leased() []int { return w.inflight[:w.lease] }

// parallel is how many units w runs at once, for rate estimates: its
// leased streams, at least one.
func (w *worker) parallel() float64 { return float64(max(w.lease, 1)) }

// freeStream returns the leased stream with window room and the fewest
// units in flight (lowest index on ties), or -1.
func (w *worker) freeStream() int {
	best := -1
	for s, n := range w.leased() {
		if n < w.window && (best < 0 || n < w.inflight[best]) {
			best = s
		}
	}
	return best
}

// depth is the in-flight count of the stream freeStream would pick.
func (w *worker) depth() int { return w.inflight[w.freeStream()] }

// idleStream returns a leased stream with nothing in flight, or -1.
func (w *worker) idleStream() int { return slices.Index(w.leased(), 0) }

// observe folds a reported compute time into the estimate. It reports
// whether the estimate changed.
func (w *worker) observe(d time.Duration) bool {
	if d <= 0 {
		return false
	}
	old := w.unitTime
	if w.samples == 0 {
		w.unitTime = d
	} else {
		w.unitTime = time.Duration(ewmaWeight*float64(d) + (1-ewmaWeight)*float64(w.unitTime))
	}
	w.samples++
	return w.unitTime != old
}

// estUnitTime is the measured compute time of one unit on one stream:
// from compute-time samples, else from the Feedback service rate.
func (w *worker) estUnitTime() (time.Duration, bool) {
	if w.samples > 0 {
		return w.unitTime, true
	}
	if w.fbRate > 0 {
		return time.Duration(w.parallel() / w.fbRate * float64(time.Second)), true
	}
	return 0, false
}

// rate is the measured service rate of the whole worker in units/s, 0 if
// unmeasured. A Feedback rate, being the worker's own figure, wins.
func (w *worker) rate() float64 {
	if w.fbRate > 0 {
		return w.fbRate
	}
	if t, ok := w.estUnitTime(); ok && t > 0 {
		return w.parallel() / t.Seconds()
	}
	return 0
}

// feedback applies a Feedback report: a queue deeper than the worker's
// total window shrinks the window to 1; an empty queue grows it by one up
// to maxWindow. It reports whether the speed estimate changed.
func (w *worker) feedback(ev Feedback, maxWindow int) bool {
	switch {
	case ev.QueueDepth > max(w.lease, 1)*w.window:
		w.window = 1
	case ev.QueueDepth == 0 && w.window < maxWindow:
		w.window++
	}
	if ev.ServiceRate <= 0 || ev.ServiceRate == w.fbRate {
		return false
	}
	w.fbRate = ev.ServiceRate
	return true
}

func (w *worker) status() WorkerStatus {
	t, _ := w.estUnitTime()
	return WorkerStatus{Name: w.name, Up: w.up, Window: w.window,
		InFlight: slices.Clone(w.inflight), Lease: w.lease, UnitTime: t}
}

package scheduler

import (
	"fmt"
	"math"
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
	// transitNow is the least Feedback.Transit of the TransitPeriod begun
	// at transitSince, transitPrev the last period's (0: none); their
	// least is the floor (transitFloor).
	transitNow, transitPrev time.Duration
	transitSince            time.Time

	// Byte budget (see "Byte budgets" in doc.go).
	bytes     int64         // input bytes of the copies held here
	holdBytes int64         // what the worker says it can hold; 0: unsaid
	avgSize   float64       // EWMA of the sizes of units sent here (0: none sized yet)
	horizon   time.Duration // Config.ByteHorizon
	doneAt    []time.Time   // when its last results came, at most deliverySamples
	// reserved: in this dispatch pass a unit is waiting for room here,
	// so later units do not take it (Core.reserve, Core.isReserved).
	reserved bool
	// sentPass and sentSeq are the dispatch pass and Core.resSeq of the
	// last unit sent here.
	sentPass, sentSeq int

	key workerKey      // what the core's indexes rank it by (index.go)
	opm []*opMember    // the operation indexes it is in
	shm []*shareMember // the static shares it holds
}

// deliverySamples is how many of a worker's last results its delivery
// rate is measured over.
const deliverySamples = 16

// delivered records a result from w at now.
func (w *worker) delivered(now time.Time) {
	if len(w.doneAt) == deliverySamples {
		w.doneAt = append(w.doneAt[:0], w.doneAt[1:]...)
	}
	w.doneAt = append(w.doneAt, now)
}

// deliveryRate is the rate at which w's last results came, in units/s, 0
// until four have come. Unlike rate, which is from compute times, it
// counts all that limits the worker: receiving inputs and sending outputs
// too, a CPU quota, memory. (A worker with too little work to be busy
// delivers below its capacity, but then it has all there is.)
func (w *worker) deliveryRate() float64 {
	n := len(w.doneAt)
	if n < 4 {
		return 0
	}
	span := w.doneAt[n-1].Sub(w.doneAt[0]).Seconds()
	if span <= 0 {
		return 0
	}
	return float64(n-1) / span
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
	// Bytes is the input bytes in flight there; Budget what it may have
	// (0: no byte limit). See "Byte budgets".
	Bytes, Budget int64
}

func newWorker(ev WorkerUp, window int) *worker {
	w := &worker{name: ev.Worker, up: true, threads: ev.Threads, window: window, holdBytes: max(ev.HoldBytes, 0),
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

// hold records a copy of unit r sent here.
func (w *worker) hold(r ref) {
	w.held = append(w.held, r)
	w.sized(r.j.sizeOf(r.i))
}

// sized counts size bytes (if known) of a copy held here, and folds them
// into the mean unit size.
func (w *worker) sized(size int64) {
	if size <= 0 {
		return
	}
	w.bytes += size
	if w.avgSize == 0 {
		w.avgSize = float64(size)
	} else {
		w.avgSize = ewmaWeight*float64(size) + (1-ewmaWeight)*w.avgSize
	}
}

// release forgets one copy of unit r held here.
func (w *worker) release(r ref) {
	if k := slices.Index(w.held, r); k >= 0 {
		w.held = slices.Delete(w.held, k, k+1)
		w.bytes -= r.j.sizeOf(r.i)
	}
}

// byteBudget is how many bytes of unit inputs w may have in flight, 0 for
// no limit: enough of its work, at the rate its results come, to last the
// horizon, and at least
// one unit per leased stream and one more (only that until it is
// measured), but never more than it says it can hold.
func (w *worker) byteBudget() int64 {
	var b int64
	if w.horizon > 0 && w.avgSize > 0 {
		f := float64(w.lease+1) * w.avgSize
		if r := w.deliveryRate(); r > 0 {
			f = max(r*w.avgSize*w.horizon.Seconds(), f)
		}
		b = int64(min(f, math.MaxInt64/2))
	}
	if w.holdBytes > 0 && (b == 0 || w.holdBytes < b) {
		b = w.holdBytes
	}
	return b
}

// byteRoom reports whether w's byte budget is not spent yet. A worker with
// nothing in flight always has room, whatever its budget.
func (w *worker) byteRoom() bool { return w.budgetFits(1) }

// budgetFits reports whether a unit of size bytes fits w's byte budget,
// reservations aside (Core.fits counts them). A worker with nothing in
// flight takes any unit.
func (w *worker) budgetFits(size int64) bool { return w.spareBytes() >= max(size, 1) }

// spareBytes is how many bytes of unit input w may still take: its byte
// budget less what it holds, math.MaxInt64 when it has no limit or holds
// nothing (then it takes any unit).
func (w *worker) spareBytes() int64 {
	if len(w.held) == 0 {
		return math.MaxInt64
	}
	b := w.byteBudget()
	if b == 0 {
		return math.MaxInt64
	}
	return b - w.bytes
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
// units in flight (lowest index on ties), or -1; -1 too when the worker's
// byte budget is spent.
func (w *worker) freeStream() int {
	if !w.byteRoom() {
		return -1
	}
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

// TransitSlack is the least transit above a worker's floor that counts as
// queued on the way (see "Flow control" in doc.go), and TransitPeriod how
// long a floor stands: one to two periods.
const (
	TransitSlack  = 2 * time.Millisecond
	TransitPeriod = 10 * time.Second
)

// feedback applies a Feedback report at now: a queue deeper than the
// worker's total window shrinks the window to 1; an empty queue grows it by
// one up to maxWindow, unless the unit's transit shows it queued on the
// way. It reports whether the speed estimate changed.
func (w *worker) feedback(ev Feedback, now time.Time, maxWindow int) bool {
	w.noteTransit(ev.Transit, now)
	switch {
	case ev.QueueDepth > max(w.lease, 1)*w.window:
		w.window = 1
	case ev.QueueDepth == 0 && w.window < maxWindow && !w.queuedOnTheWay(ev.Transit):
		w.window++
	}
	if ev.ServiceRate <= 0 || ev.ServiceRate == w.fbRate {
		return false
	}
	w.fbRate = ev.ServiceRate
	return true
}

// noteTransit adds a transit to the current period's least (a two-bucket
// windowed minimum).
func (w *worker) noteTransit(transit time.Duration, now time.Time) {
	if transit <= 0 {
		return
	}
	if w.transitSince.IsZero() || now.Sub(w.transitSince) >= TransitPeriod {
		w.transitPrev, w.transitNow, w.transitSince = w.transitNow, 0, now
	}
	if w.transitNow == 0 || transit < w.transitNow {
		w.transitNow = transit
	}
}

// transitFloor is the least transit of this period and the last (0: none):
// the path's round trip and a unit's transfer with nothing queued on the
// way, forgotten within two periods when the path or the units' sizes
// change.
func (w *worker) transitFloor() time.Duration {
	if w.transitPrev > 0 && w.transitPrev < w.transitNow {
		return w.transitPrev
	}
	return w.transitNow
}

// queuedOnTheWay reports a transit above the worker's floor by a quarter
// of it, at least TransitSlack: the unit waited somewhere between the
// server and the worker's queue (the server's send queue, the transport,
// the link), and a larger window would only lengthen that wait.
func (w *worker) queuedOnTheWay(transit time.Duration) bool {
	f := w.transitFloor()
	return transit > 0 && f > 0 && transit-f > max(f/4, TransitSlack)
}

func (w *worker) status() WorkerStatus {
	t, _ := w.estUnitTime()
	return WorkerStatus{Name: w.name, Up: w.up, Window: w.window,
		InFlight: slices.Clone(w.inflight), Lease: w.lease, UnitTime: t, Bytes: w.bytes, Budget: w.byteBudget()}
}

package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/wire"
)

// admissionRig is a dispatcher driven by hand with workers one stream
// each, whose goroutines' wait the test sets.
type admissionRig struct {
	t      *testing.T
	s      *Server
	d      *dispatcher
	queues map[string]chan []byte
	out    map[string][]uint64 // units taken from the queues and not yet answered
	wait   time.Duration       // what the runtime is said to report
}

func newAdmissionRig(t *testing.T, workers int) *admissionRig {
	s := newTestServer(t, t.TempDir())
	r := &admissionRig{t: t, s: s, d: s.disp, queues: map[string]chan []byte{}, out: map[string][]uint64{}}
	r.d.admit.floor = 4
	r.d.admit.latency = func() (time.Duration, uint64) { return r.wait, 1000 }
	for i := range workers {
		name := fmt.Sprintf("w%d", i)
		q := make(chan []byte, 64)
		r.queues[name] = q
		r.d.workers[name] = &workerConn{info: api.WorkerInfo{Name: name}, assoc: &fakeAssoc{}, queues: []chan []byte{q},
			wantQ: make(chan []byte, 1), live: &liveness{}}
		r.d.step(scheduler.WorkerUp{Worker: name, Streams: 1, Threads: 1, Ops: []string{"blur"}})
	}
	return r
}

// sent drains every worker's queue and returns the units' flight ids by
// worker, in the order they were queued; they are out until answer.
func (r *admissionRig) sent() map[string][]uint64 {
	out := map[string][]uint64{}
	for name, q := range r.queues {
		for len(q) > 0 {
			msg := <-q
			if wire.KindOf(msg) != wire.KindUnit {
				continue
			}
			u, err := wire.ParseUnit(msg)
			if err != nil {
				r.t.Fatal(err)
			}
			out[name] = append(out[name], u.ID)
			r.out[name] = append(r.out[name], u.ID)
		}
	}
	return out
}

// answer feeds the loop a successful result for every unit out, as the
// readers would, running the end of the loop's step after each.
func (r *admissionRig) answer() {
	ids := r.out
	r.out = map[string][]uint64{}
	for name, list := range ids {
		for _, id := range list {
			r.d.onResult(resultMsg{worker: name, gen: r.d.workers[name].gen, kind: wire.KindResult,
				res: wire.Result{ID: id, Status: wire.StatusOK}, returned: time.Now()})
			r.d.releaseParked()
		}
	}
}

// adjust moves the bound as the loop's tick does.
func (r *admissionRig) adjust() {
	r.d.nextAdjust = time.Time{}
	r.d.adjustAdmission(time.Now())
	r.d.releaseParked()
}

func count(ids map[string][]uint64) int {
	n := 0
	for _, l := range ids {
		n += len(l)
	}
	return n
}

// TestAdmissionBoundsUnitsOut: while the server's goroutines wait longer
// than the target to run, the units it places beyond the bound wait in the
// server instead of going out, and go out in placement order as results
// come back; the bound rises again while the wait is short, and starts
// again at its floor when nothing is in flight. On the old server every placed unit was
// queued for its worker at once.
func TestAdmissionBoundsUnitsOut(t *testing.T) {
	r := newAdmissionRig(t, 8)
	j := newJobRun("j-adm", api.JobSpec{Op: "blur", Policy: "dynamic"}, 200, time.Now())
	j.input = []byte("x")
	r.s.addVisible(j)
	r.d.addJob(j)
	first := r.sent()
	if n := count(first); n != 16 { // two units a one-stream worker at first
		t.Fatalf("%d units sent at first, want 16 (no bound while the wait is short)", n)
	}

	r.wait = time.Second
	r.adjust() // the bound falls to three quarters of the units out
	if l := r.d.admit.limit; l != 12 {
		t.Fatalf("bound %d after a long wait with 16 out, want 12", l)
	}
	r.answer() // 16 answered, 16 placed: 12 go out, 4 wait
	second := r.sent()
	if n, out, parked := count(second), r.d.unanswered(), r.d.admit.live; n != 12 || out != 12 || parked != 4 {
		t.Fatalf("after the results: %d sent, %d out, %d parked; want 12, 12, 4", n, out, parked)
	}
	for _, f := range r.d.inflight {
		if f.parked && f.sent.IsZero() {
			t.Fatal("a parked unit with no time")
		}
	}

	r.wait = time.Millisecond
	r.adjust() // short wait, units held back: the bound rises by an eighth
	if n := count(r.sent()); n != 1 || r.d.admit.limit != 13 {
		t.Fatalf("after a short wait: %d more sent with bound %d, want 1 with 13", n, r.d.admit.limit)
	}

	// A worker going down takes its parked units with it: they are not sent.
	var down string
	for _, f := range r.d.inflight {
		if f.parked {
			down = f.worker
			break
		}
	}
	w := r.d.workers[down]
	parkedThere := 0
	for _, id := range w.flights {
		if r.d.inflight[id].parked {
			parkedThere++
		}
	}
	before := r.d.admit.live
	r.d.workerDown(w, fmt.Errorf("test"))
	if r.d.admit.live != before-parkedThere {
		t.Fatalf("parked %d after %s went down with %d parked, want %d", r.d.admit.live, down, parkedThere, before-parkedThere)
	}
	delete(r.queues, down)
	delete(r.out, down)

	// Answer everything until the job ends: every unit counted once,
	// none ever beyond the bound, and the bound back at its floor at the
	// end.
	for range 100 {
		if r.d.unanswered() > r.d.admit.limit {
			t.Fatalf("%d out with bound %d", r.d.unanswered(), r.d.admit.limit)
		}
		if r.sent(); count(r.out) == 0 {
			break
		}
		r.answer()
	}
	r.adjust()
	if p, _ := r.d.core.Progress(j.id); p.Done != 200 {
		t.Fatalf("job progress %+v, want 200 done", p)
	}
	if a := r.d.admit; a.limit != a.floor || a.live != 0 {
		t.Fatalf("after the job: bound %d, %d parked; want the floor %d, none", a.limit, a.live, a.floor)
	}
}

// TestAdmissionStartsAtFloor: with nothing in flight the bound is at its
// floor, so a job's first placement does not go out at once (the old
// server lifted the bound: a unit for each worker at once, whose results
// held the API); while the wait is short it rises by an eighth at every
// adjustment that finds units held back, so a server that keeps up holds
// them back only until it has risen to the units placed.
func TestAdmissionStartsAtFloor(t *testing.T) {
	r := newAdmissionRig(t, 8)
	r.d.admit.floor = 8
	r.wait = time.Millisecond
	r.adjust() // nothing in flight: the bound at its floor
	j := newJobRun("j-adm", api.JobSpec{Op: "blur", Policy: "dynamic"}, 200, time.Now())
	j.input = []byte("x")
	r.s.addVisible(j)
	r.d.addJob(j)
	if n, parked := count(r.sent()), r.d.admit.live; n != 8 || parked != 8 {
		t.Fatalf("%d units sent at first, %d parked; want the floor, 8, and the 8 more placed", n, parked)
	}
	for _, want := range []int{9, 10, 11, 12, 13, 14, 15, 16} {
		r.adjust()
		r.sent()
		if l := r.d.admit.limit; l != want {
			t.Fatalf("bound %d after a short wait, want %d (an eighth more)", l, want)
		}
	}
	if out, parked := r.d.unanswered(), r.d.admit.live; out != 16 || parked != 0 {
		t.Fatalf("once the bound reached the units placed: %d out, %d parked; want 16, 0", out, parked)
	}
	for range 100 {
		if count(r.out) == 0 {
			break
		}
		r.answer()
		before, held := r.d.admit.limit, r.d.admit.live
		r.adjust()
		if len(r.d.inflight) == 0 { // the job is done: the floor again
			break
		}
		if grown := before + max(before/8, 1); held > 0 && r.d.admit.limit != grown || held == 0 && r.d.admit.limit != before {
			t.Fatalf("bound %d after %d held at %d with a short wait; want it an eighth more only if units were held", r.d.admit.limit, held, before)
		}
		r.sent()
	}
	if p, _ := r.d.core.Progress(j.id); p.Done != 200 {
		t.Fatalf("job progress %+v, want 200 done", p)
	}
	if r.d.admit.limit != r.d.admit.floor {
		t.Fatalf("bound %d after the job, want the floor %d", r.d.admit.limit, r.d.admit.floor)
	}
}

func TestBucketQuantile(t *testing.T) {
	buckets := []float64{0, 0.001, 0.01, 0.1, 1}
	counts := []uint64{90, 9, 0, 1}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, time.Millisecond}, {0.9, time.Millisecond}, {0.95, 10 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {1, time.Second}} {
		if got := bucketQuantile(buckets, counts, 100, c.q); got != c.want {
			t.Errorf("q %v: %v, want %v", c.q, got, c.want)
		}
	}
}

// TestParkedUnsendableUnitFails: a parked unit the wire cannot encode
// fails its job when its turn comes, and leaves nothing in flight.
func TestParkedUnsendableUnitFails(t *testing.T) {
	r := newAdmissionRig(t, 2)
	r.d.admit.limit = 0 // hold every unit back
	bad := newJobRun("j-bad", api.JobSpec{Op: "blur", Policy: "dynamic"}, 3, time.Now())
	bad.input, bad.params = []byte("x"), ops.Params{"sigma": "2." + strings.Repeat("0", 70_000)}
	r.s.addVisible(bad)
	r.d.addJob(bad)
	if r.d.admit.live == 0 || count(r.sent()) != 0 {
		t.Fatalf("%d parked, units sent: want every unit held back", r.d.admit.live)
	}
	r.d.admit.limit = noLimit
	r.d.releaseParked()
	if bad.end != api.JobFailed {
		t.Fatalf("job with an unsendable parked unit: end %q, want failed", bad.end)
	}
	if n, out := count(r.sent()), len(r.d.inflight); n != 0 || out != 0 || r.d.admit.live != 0 {
		t.Fatalf("%d sent, %d in flight, %d parked after the failure; want none", n, out, r.d.admit.live)
	}
	for name, w := range r.d.workers {
		if len(w.flights) != 0 {
			t.Errorf("worker %s still lists flights %v", name, w.flights)
		}
	}
}

// parkAll places a job of n units with every unit held back.
func (r *admissionRig) parkAll(id string, n int) *jobRun {
	r.d.admit.limit = 0
	j := newJobRun(id, api.JobSpec{Op: "blur", Policy: "dynamic"}, n, time.Now())
	j.input = []byte("x")
	r.s.addVisible(j)
	r.d.addJob(j)
	if r.d.admit.live == 0 || count(r.sent()) != 0 {
		r.t.Fatalf("%d parked, units sent: want every unit held back", r.d.admit.live)
	}
	return j
}

// release lifts the bound and runs releaseParked, failing the test if it
// does not return (it spun when its count of parked units was too high).
func (r *admissionRig) release() {
	r.t.Helper()
	r.d.admit.limit = noLimit
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.d.releaseParked()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // it returns in microseconds
		r.t.Fatal("releaseParked did not return")
	}
}

// parkedFlights are the ids of the flights parked now.
func (r *admissionRig) parkedFlights() []uint64 {
	var ids []uint64
	for id, f := range r.d.inflight {
		if f.parked {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestResultForParkedUnitIgnored: a worker that answers a unit it was
// never sent (it is parked; flight ids are sequential) changes nothing,
// and the unit goes out when the bound allows. The old server took the
// flight out of flight but kept counting it parked, and its loop then
// spun for ever looking for it.
func TestResultForParkedUnitIgnored(t *testing.T) {
	r := newAdmissionRig(t, 2)
	r.parkAll("j-adm", 10)
	parked := r.d.admit.live
	id := r.parkedFlights()[0]
	f := r.d.inflight[id]
	r.d.onResult(resultMsg{worker: f.worker, gen: f.gen, kind: wire.KindResult,
		res: wire.Result{ID: id, Status: wire.StatusOK}, returned: time.Now()})
	if g, ok := r.d.inflight[id]; !ok || !g.parked || r.d.admit.live != parked {
		t.Fatalf("after a result for parked unit %d: in flight %v, parked %v, %d counted parked; want it parked, %d",
			id, ok, g.parked, r.d.admit.live, parked)
	}
	r.release()
	if n := count(r.sent()); n != parked || r.d.admit.live != 0 {
		t.Fatalf("%d sent, %d parked once the bound lifted; want %d, 0", n, r.d.admit.live, parked)
	}
}

// TestReleaseParkedCountTooHigh: should the count of parked units exceed
// the units parked (a bug), releaseParked sends what is parked, corrects
// the count and returns; the old one spun for ever.
func TestReleaseParkedCountTooHigh(t *testing.T) {
	r := newAdmissionRig(t, 2)
	r.parkAll("j-adm", 10)
	parked := r.d.admit.live
	r.d.admit.live += 3
	r.release()
	if n := count(r.sent()); n != parked || r.d.admit.live != 0 {
		t.Fatalf("%d sent, %d counted parked; want %d, 0", n, r.d.admit.live, parked)
	}
}

// TestDrainReturnsParkedUnits: a draining server sends no parked unit; it
// hands them back to the core unrun (they run after the next start), and
// is drained once the units it did send are answered. The old one sent
// them as results came back, and waited for them.
func TestDrainReturnsParkedUnits(t *testing.T) {
	r := newAdmissionRig(t, 2)
	r.d.admit.limit = 2
	j := newJobRun("j-adm", api.JobSpec{Op: "blur", Policy: "dynamic"}, 20, time.Now())
	j.input = []byte("x")
	r.s.addVisible(j)
	r.d.addJob(j)
	if n := count(r.sent()); n != 2 || r.d.admit.live == 0 {
		t.Fatalf("%d sent, %d parked; want 2 sent and some parked", n, r.d.admit.live)
	}
	drained := make(chan struct{})
	r.d.startDrain(drained)
	if n := len(r.d.inflight); n != 2 || r.d.admit.live != 0 || len(r.parkedFlights()) != 0 {
		t.Fatalf("draining: %d in flight, %d counted parked, %d parked; want 2, 0, 0", n, r.d.admit.live, len(r.parkedFlights()))
	}
	for name, w := range r.d.workers {
		for _, id := range w.flights {
			if _, ok := r.d.inflight[id]; !ok {
				t.Errorf("worker %s lists flight %d, not in flight", name, id)
			}
		}
	}
	if p, _ := r.d.core.Progress(j.id); p.Running != 2 || p.Pending != 18 {
		t.Fatalf("core's progress %+v while draining, want 2 running and 18 pending", p)
	}
	r.release()
	if n := count(r.sent()); n != 0 {
		t.Fatalf("%d units sent while draining, want none", n)
	}
	r.answer()
	r.d.checkDrained()
	select {
	case <-drained:
	default:
		t.Fatalf("not drained with %d in flight", len(r.d.inflight))
	}
}

// TestParkedUnitsOfEndedJobNotSent: the parked units of a cancelled job
// are handed back to the core, not sent, and the job can be forgotten.
// The old server sent them, and workers ran them for nothing.
func TestParkedUnitsOfEndedJobNotSent(t *testing.T) {
	r := newAdmissionRig(t, 2)
	j := r.parkAll("j-adm", 10)
	if _, err := r.d.cancel(j); err != nil {
		t.Fatal(err)
	}
	r.release()
	if n, out := count(r.sent()), len(r.d.inflight); n != 0 || out != 0 || r.d.admit.live != 0 {
		t.Fatalf("%d sent, %d in flight, %d parked after the cancel; want none", n, out, r.d.admit.live)
	}
	for name, w := range r.d.workers {
		if len(w.flights) != 0 {
			t.Errorf("worker %s still lists flights %v", name, w.flights)
		}
	}
	r.d.forgetEnded()
	if _, known := r.d.core.Progress(j.id); known {
		t.Fatal("the core still holds the cancelled job: a copy still counts in flight")
	}
}

// TestCountRunningSkipsParked: a parked unit is not running (it is in the
// server, not on a worker); the old count took it for running.
func TestCountRunningSkipsParked(t *testing.T) {
	r := newAdmissionRig(t, 2)
	j := r.parkAll("j-adm", 10)
	for _, w := range r.d.workers {
		w.lease = 4
	}
	if n := r.d.countRunning()[j.id]; n != 0 {
		t.Fatalf("%d running with every unit parked, want 0", n)
	}
	r.release()
	sent := count(r.sent())
	if n := r.d.countRunning()[j.id]; sent == 0 || n != sent {
		t.Fatalf("%d running with %d sent (fewer than the leases), want %d", n, sent, sent)
	}
}

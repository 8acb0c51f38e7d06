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
// come back; the bound rises again while the wait is short, and lifts
// when nothing is in flight. On the old server every placed unit was
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
	// none ever beyond the bound, and the bound lifted at the end.
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
	if r.d.admit.limit != noLimit || r.d.admit.live != 0 {
		t.Fatalf("after the job: bound %d, %d parked; want none", r.d.admit.limit, r.d.admit.live)
	}
}

// TestAdmissionOffWithoutLag: a server whose goroutines run at once never
// holds a unit back.
func TestAdmissionOffWithoutLag(t *testing.T) {
	r := newAdmissionRig(t, 4)
	r.wait = time.Millisecond
	j := newJobRun("j-adm", api.JobSpec{Op: "blur", Policy: "dynamic"}, 50, time.Now())
	j.input = []byte("x")
	r.s.addVisible(j)
	r.d.addJob(j)
	for range 50 {
		r.adjust()
		r.sent()
		if r.d.admit.live != 0 || r.d.admit.limit != noLimit {
			t.Fatalf("%d parked, bound %d, with a short wait", r.d.admit.live, r.d.admit.limit)
		}
		if count(r.out) == 0 {
			break
		}
		r.answer()
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

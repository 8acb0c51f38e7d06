package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/wire"
)

// BenchmarkDispatchUnit is the dispatch loop's cost per unit, without the
// network: a result comes back from a worker (onResult: the core's step,
// the unit's record queued for state.db, the job's progress) and the
// next unit is encoded and queued for a stream. Its cost should not grow
// with the number of workers.
func BenchmarkDispatchUnit(b *testing.B) {
	for _, workers := range []int{10, 1000} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchmarkDispatchUnit(b, workers) })
	}
}

func benchmarkDispatchUnit(b *testing.B, workers int) {
	s := newTestServer(b, b.TempDir())
	d := s.disp
	for k := range workers {
		name := fmt.Sprintf("w%05d", k)
		w := &workerConn{info: api.WorkerInfo{Name: name, MaxThreads: 1}, assoc: &fakeAssoc{}, state: api.WorkerUp,
			queues: []chan []byte{make(chan []byte, 64)}, wantQ: make(chan []byte, 1), live: &liveness{}, beat: make(chan struct{})}
		d.workers[name] = w
		d.step(scheduler.WorkerUp{Worker: name, Streams: 1, Threads: 1, Ops: []string{"noop"}})
	}
	const units = 1_000_000
	j := newJobRun("j-bench", api.JobSpec{Op: "noop", Policy: "dynamic", Repeat: units}, units, time.Now())
	j.input = make([]byte, 1024)
	d.addJob(j)
	out, err := s.store.PutBytes(s.ctx, j.input)
	if err != nil {
		b.Fatal(err)
	}
	// Answer units from the queues in the order they were sent.
	var sent []*workerConn
	for _, w := range d.workers {
		for range len(w.queues[0]) {
			sent = append(sent, w)
		}
	}
	answer := func(w *workerConn) {
		msg := <-w.queues[0]
		u, err := wire.ParseUnit(msg)
		if err != nil {
			b.Fatal(err)
		}
		putBuf(msg)
		d.onResult(resultMsg{worker: w.info.Name, gen: w.gen, kind: wire.KindResult, returned: time.Now(),
			res: wire.Result{ID: u.ID, Compute: time.Microsecond, Rate: 1e6}, output: out.ID, size: out.Size})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		w := sent[i%len(sent)]
		if len(w.queues[0]) == 0 {
			b.Fatalf("worker %s has no unit to answer after %d results", w.info.Name, i)
		}
		answer(w)
	}
	b.StopTimer()
	s.db.Flush()
}

// BenchmarkWorkerDown is the loop's cost of one worker's association
// ending while 1,000 workers have units in flight: its units go back
// to the core (a worker that churns costs its own units, not everyone's).
func BenchmarkWorkerDown(b *testing.B) {
	s := newTestServer(b, b.TempDir())
	d := s.disp
	const workers = 1000
	var ws []*workerConn
	for k := range workers {
		name := fmt.Sprintf("w%05d", k)
		w := &workerConn{info: api.WorkerInfo{Name: name, MaxThreads: 1}, assoc: &fakeAssoc{}, state: api.WorkerUp,
			queues: []chan []byte{make(chan []byte, 64)}, wantQ: make(chan []byte, 1), live: &liveness{}, beat: make(chan struct{})}
		d.workers[name] = w
		ws = append(ws, w)
		d.step(scheduler.WorkerUp{Worker: name, Streams: 1, Threads: 1, Ops: []string{"noop"}})
	}
	j := newJobRun("j-bench", api.JobSpec{Op: "noop", Policy: "dynamic", Repeat: 1_000_000}, 1_000_000, time.Now())
	j.input = make([]byte, 64)
	d.addJob(j)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		w := ws[i%workers]
		b.StopTimer()
		if w.assoc == nil { // bring it back with units in flight
			w.assoc, w.queues, w.state = &fakeAssoc{}, []chan []byte{make(chan []byte, 64)}, api.WorkerUp
			d.step(scheduler.WorkerUp{Worker: w.info.Name, Streams: 1, Threads: 1, Ops: []string{"noop"}})
		}
		b.StartTimer()
		d.workerDown(w, fmt.Errorf("bench"))
	}
}

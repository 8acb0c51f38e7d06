package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/wire"
	"github.com/braidhq/braid/worker"
)

// A unit that arrives after the worker lent its threads to another server
// (which then went idle), from a server whose want waited behind a large
// unit on stream 0 (it still counts the lease it had), is run, not handed
// back: its arrival is the server's demand. The test plays both servers
// over real associations. Before, a job of four 16 MiB units through a
// 100 Mbit/s link had one handed back after it crossed the link, and sent
// again.
func TestUnitAfterLeaseLapsedRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := tcpn.New(tcpn.Config{})
	const idle = 20 * time.Millisecond
	w, err := worker.New(worker.Config{Name: "lapse", Servers: []string{"http://127.0.0.1:1"}, Threads: 2,
		Transport: tr, Secret: secret, LeaseIdle: idle})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, w)
	dial := func(id string) transport.Association {
		t.Helper()
		a, err := tr.Dial(ctx, w.DataAddr().String(), transport.DialConfig{Secret: secret, Name: "test",
			ID: id, Epoch: 1, RecStreams: 2, MaxStreams: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Abort(nil) })
		return a
	}
	lease := func(a transport.Association, want int) wire.Lease {
		t.Helper()
		for {
			msg, err := a.Recv(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if wire.KindOf(msg) != wire.KindLease {
				t.Fatalf("stream 0: a %s message, want a lease of %d", wire.KindOf(msg), want)
			}
			l, err := wire.ParseLease(msg)
			if err != nil {
				t.Fatal(err)
			}
			if l.Streams == want {
				return l
			}
		}
	}
	send := func(a transport.Association, s int, msg []byte) {
		t.Helper()
		if err := a.Send(ctx, s, msg); err != nil {
			t.Fatal(err)
		}
	}
	a := dial("test-server")
	l := lease(a, 2) // nobody else wants the threads
	send(a, 0, wire.AppendWant(nil, wire.Want{Streams: 2, LeaseSeq: l.Seq}))
	send(a, 0, wire.AppendWant(nil, wire.Want{Streams: 0, LeaseSeq: l.Seq})) // the job ended
	time.Sleep(10 * idle)                                                    // a's idle hold runs out

	b := dial("other-server")
	lb := lease(b, 0) // a holds them
	send(b, 0, wire.AppendWant(nil, wire.Want{Streams: 2, LeaseSeq: lb.Seq}))
	lb = lease(b, 2)
	lease(a, 0) // b took a's threads
	send(b, 0, wire.AppendWant(nil, wire.Want{Streams: 0, LeaseSeq: lb.Seq}))
	time.Sleep(10 * idle) // b's hold runs out too (with room for a slow worker); it keeps the threads while nobody asks

	u := wire.Unit{ID: 7, Job: "j", Index: 3, Attempt: 1, Op: "noop", Input: []byte("bytes that crossed the link")}
	msg, err := wire.AppendUnit(nil, &u)
	if err != nil {
		t.Fatal(err)
	}
	send(a, 1, msg)
	lease(a, 2)
	res, err := a.Recv(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := wire.ParseResult(res)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != 7 || r.Status != wire.StatusOK {
		t.Fatalf("result of unit %d: status %v (%s), want it run", r.ID, r.Status, r.Error)
	}
}

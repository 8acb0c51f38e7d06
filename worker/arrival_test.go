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
	const idle = 20 * time.Millisecond
	tr, w := playWorker(t, ctx, idle)
	a := playServer(t, ctx, tr, w, "test-server")
	l := a.lease(2) // nobody else wants the threads
	a.send(0, wire.AppendWant(nil, wire.Want{Streams: 2, LeaseSeq: l.Seq}))
	a.send(0, wire.AppendWant(nil, wire.Want{Streams: 0, LeaseSeq: l.Seq})) // the job ended
	time.Sleep(10 * idle)                                                   // a's idle hold runs out

	b := playServer(t, ctx, tr, w, "other-server")
	lb := b.lease(0) // a holds them
	b.send(0, wire.AppendWant(nil, wire.Want{Streams: 2, LeaseSeq: lb.Seq}))
	lb = b.lease(2)
	a.lease(0) // b took a's threads
	b.send(0, wire.AppendWant(nil, wire.Want{Streams: 0, LeaseSeq: lb.Seq}))
	time.Sleep(10 * idle) // b's hold runs out too (with room for a slow worker); it keeps the threads while nobody asks

	a.unit(1, 7)
	a.lease(2)
	a.ran(1, 7)
}

// A unit that arrives on a stream lent spare (its server never asked for
// it) raises the server's want without changing its lease; the worker then
// sends the lease again all the same, since only a new lease draws the
// server's answer, and a want raised by a unit and never corrected would
// hold the thread against other servers. After the answer (want 0) and
// the idle hold, another server's want takes every thread.
func TestUnitOnSpareStreamDrawsAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const idle = 20 * time.Millisecond
	tr, w := playWorker(t, ctx, idle)
	a := playServer(t, ctx, tr, w, "test-server")
	l := a.lease(2) // spare: a has asked for nothing
	b := playServer(t, ctx, tr, w, "other-server")
	lb := b.lease(0)

	a.unit(1, 9)
	a.ran(1, 9)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	msg, err := a.a.Recv(wctx, 0)
	if err != nil {
		t.Fatalf("no lease sent again after a unit on a spare stream: %v", err)
	}
	again, err := wire.ParseLease(msg)
	if err != nil || again.Streams != 2 || again.Seq == l.Seq {
		t.Fatalf("after a unit on a spare stream: %+v (%v), want the lease of 2 again under a new seq", again, err)
	}
	a.send(0, wire.AppendWant(nil, wire.Want{Streams: 0, LeaseSeq: again.Seq})) // the answer
	time.Sleep(10 * idle)
	b.send(0, wire.AppendWant(nil, wire.Want{Streams: 2, LeaseSeq: lb.Seq}))
	b.lease(2)
	a.lease(0)
}

// playWorker runs a 2-thread worker over tcpn with the idle hold given.
func playWorker(t *testing.T, ctx context.Context, idle time.Duration) (transport.Transport, *worker.Worker) {
	t.Helper()
	tr := tcpn.New(tcpn.Config{})
	w, err := worker.New(worker.Config{Name: "lapse", Servers: []string{"http://127.0.0.1:1"}, Threads: 2,
		Transport: tr, Secret: secret, LeaseIdle: idle})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, w)
	return tr, w
}

// player is a test playing a server over a real association.
type player struct {
	t   *testing.T
	ctx context.Context
	a   transport.Association
}

func playServer(t *testing.T, ctx context.Context, tr transport.Transport, w *worker.Worker, id string) *player {
	t.Helper()
	a, err := tr.Dial(ctx, w.DataAddr().String(), transport.DialConfig{Secret: secret, Name: "test",
		ID: id, Epoch: 1, RecStreams: 2, MaxStreams: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Abort(nil) })
	return &player{t: t, ctx: ctx, a: a}
}

// lease reads stream 0 until a lease of want streams comes.
func (p *player) lease(want int) wire.Lease {
	p.t.Helper()
	for {
		msg, err := p.a.Recv(p.ctx, 0)
		if err != nil {
			p.t.Fatal(err)
		}
		if wire.KindOf(msg) != wire.KindLease {
			p.t.Fatalf("stream 0: a %s message, want a lease of %d", wire.KindOf(msg), want)
		}
		l, err := wire.ParseLease(msg)
		if err != nil {
			p.t.Fatal(err)
		}
		if l.Streams == want {
			return l
		}
	}
}

func (p *player) send(s int, msg []byte) {
	p.t.Helper()
	if err := p.a.Send(p.ctx, s, msg); err != nil {
		p.t.Fatal(err)
	}
}

// unit sends a noop unit id on stream s.
func (p *player) unit(s int, id uint64) {
	p.t.Helper()
	u := wire.Unit{ID: id, Job: "j", Index: 3, Attempt: 1, Op: "noop", Input: []byte("bytes that crossed the link")}
	msg, err := wire.AppendUnit(nil, &u)
	if err != nil {
		p.t.Fatal(err)
	}
	p.send(s, msg)
}

// ran reads unit id's result on stream s and checks that it ran. Stream 0
// also carries the worker's leases, which may come first: ran skips them.
func (p *player) ran(s int, id uint64) {
	p.t.Helper()
	res, err := p.a.Recv(p.ctx, s)
	for err == nil && s == 0 && wire.KindOf(res) == wire.KindLease {
		res, err = p.a.Recv(p.ctx, s)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	r, err := wire.ParseResult(res)
	if err != nil {
		p.t.Fatal(err)
	}
	if r.ID != id || r.Status != wire.StatusOK {
		p.t.Fatalf("result of unit %d: status %v (%s), want unit %d run", r.ID, r.Status, r.Error, id)
	}
}

package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/wire"
	"github.com/braidhq/braid/worker"
)

// busyCount wraps a transport whose accepted associations count the Busy
// holds taken on them (transport.Busier) and those not yet released.
type busyCount struct {
	transport.Transport
	taken, held atomic.Int64
}

func (b *busyCount) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	ln, err := b.Transport.Listen(addr, cfg)
	return busyListener{ln, b}, err
}

type busyListener struct {
	transport.Listener
	b *busyCount
}

func (l busyListener) Accept(ctx context.Context) (transport.Association, error) {
	a, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return busyAssoc{a, l.b}, nil
}

type busyAssoc struct {
	transport.Association
	b *busyCount
}

func (a busyAssoc) Busy() func() {
	a.b.taken.Add(1)
	a.b.held.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			a.b.held.Add(-1)
		}
	}
}

// TestUnitHoldsAssociationBusy: a unit holds its association busy from
// its arrival until its result is sent, and a unit handed back until the
// hand-back is, so that the server notices the worker's loss within the
// liveness bound meanwhile, not the idle bound.
func TestUnitHoldsAssociationBusy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr := &busyCount{Transport: tcpn.New(tcpn.Config{})}
	w, err := worker.New(worker.Config{Name: "busy", Servers: []string{"http://127.0.0.1:1"}, Threads: 2,
		Transport: tr, Secret: secret, LeaseIdle: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, w)
	a := playServer(t, ctx, tr, w, "test-server")
	l := a.lease(2)
	a.send(0, wire.AppendWant(nil, wire.Want{Streams: 2, LeaseSeq: l.Seq}))
	a.unit(1, 7)
	a.ran(1, 7)
	waitHeld(t, tr, 1)
	a.unit(0, 8)
	a.ran(0, 8)
	waitHeld(t, tr, 2)
}

// waitHeld waits until taken holds were taken and all released.
func waitHeld(t *testing.T, b *busyCount, taken int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.taken.Load() != taken || b.held.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d busy holds taken, %d not released; want %d taken, all released", b.taken.Load(), b.held.Load(), taken)
		}
		time.Sleep(time.Millisecond)
	}
}

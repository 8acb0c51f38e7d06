package sctp

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// testPair returns a connected dialer and listener association with two
// streams on loopback.
func testPair(t *testing.T) (d, l *Association) {
	t.Helper()
	tr := New(Config{})
	ln := listen(t, tr, 2)
	return dialPair(t, tr, ln, ln.Addr().String(), 2)
}

// listen starts a listener for n streams on loopback.
func listen(t *testing.T, tr *Transport, n int) transport.Listener {
	t.Helper()
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: n, MaxStreams: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialPair returns an association with n streams dialed to addr (ln's
// own address or a relay's) and its accepted peer.
func dialPair(t *testing.T, tr *Transport, ln transport.Listener, addr string, n int) (d, l *Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ch := make(chan transport.Association, 1)
	go func() {
		a, _ := ln.Accept(ctx)
		ch <- a
	}()
	da, err := tr.Dial(ctx, addr, transport.DialConfig{Secret: secret, RecStreams: n, MaxStreams: n})
	if err != nil {
		t.Fatal(err)
	}
	la := <-ch
	if la == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { da.Abort(nil); la.Abort(nil) })
	return da.(*Association), la.(*Association)
}

// drain receives stream s until ctx ends.
func drain(ctx context.Context, a *Association, s int) {
	for {
		if _, err := a.Recv(ctx, s); err != nil {
			return
		}
	}
}

// TestSchedulerBoundsPion sends bulk on two streams and checks, every
// millisecond, that the bytes pion holds for the data streams never exceed
// the largest limit the scheduler set by more than one fragment (without
// the scheduler they reach a credit window per stream, 8 MiB here).
func TestSchedulerBoundsPion(t *testing.T) {
	d, l := testPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var wg sync.WaitGroup
	msg := make([]byte, 8<<20)
	for s := range 2 {
		wg.Go(func() { drain(ctx, l, s) })
		wg.Go(func() {
			for d.Send(ctx, s, msg) == nil {
			}
		})
	}
	q := d.sched
	var most, limit, samples int
	for tick := time.Tick(time.Millisecond); ctx.Err() == nil; <-tick {
		q.mu.Lock()
		b := int(q.streams[0].BufferedAmount() + q.streams[1].BufferedAmount())
		most, limit = max(most, b), max(limit, q.limit)
		q.mu.Unlock()
		samples++
	}
	cancel()
	wg.Wait()
	t.Logf("%d samples: pion held at most %d bytes; largest limit %d", samples, most, limit)
	if frag := d.cfg.FragmentSize + fragHeaderLen; most > limit+frag {
		t.Errorf("pion held %d bytes, limit was at most %d (+%d for one fragment)", most, limit, frag)
	}
	if most == 0 {
		t.Error("pion never held any data: the test measured nothing")
	}
}

// TestSendCancelledMidMessage cancels Sends of 1 MiB messages beside a bulk
// stream, many of them while they wait for the scheduler, and checks that
// whole messages arrive intact, the abandoned ones not at all, and that the
// credit taken for fragments never sent was given back.
func TestSendCancelledMidMessage(t *testing.T) {
	d, l := testPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	bulk := make([]byte, 8<<20)
	wg.Go(func() { drain(ctx, l, 0) })
	wg.Go(func() {
		for d.Send(ctx, 0, bulk) == nil {
		}
	})
	const tries = 40
	cancelled := 0
	for i := range tries {
		sctx, scancel := context.WithTimeout(ctx, time.Duration(2+2*i)*time.Millisecond)
		err := d.Send(sctx, 1, bytes.Repeat([]byte{byte(i)}, 1<<20))
		scancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			cancelled++
		case err != nil:
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	last := []byte("last")
	if err := d.Send(ctx, 1, last); err != nil {
		t.Fatalf("Send after the cancelled ones: %v", err)
	}
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	got := 0
	for {
		m, err := l.Recv(rctx, 1)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if bytes.Equal(m, last) {
			break
		}
		if len(m) != 1<<20 || !bytes.Equal(m, bytes.Repeat(m[:1], len(m))) {
			t.Fatalf("message of %d bytes is damaged", len(m))
		}
		got++
	}
	t.Logf("%d of %d Sends cancelled, %d whole messages arrived", cancelled, tries, got)
	if got+cancelled != tries {
		t.Errorf("%d messages arrived, want %d (the ones not cancelled)", got, tries-cancelled)
	}
	if cancelled == 0 {
		t.Log("no Send was cancelled: the machine was fast enough to send them all")
	}
	d.send[1].mu.Lock()
	sent := d.send[1].sent
	d.send[1].mu.Unlock()
	l.recv[1].mu.Lock()
	received := l.recv[1].received
	l.recv[1].mu.Unlock()
	if sent != received {
		t.Errorf("stream 1: sender counted %d bytes of credit used, receiver %d received", sent, received)
	}
}

func TestBDPEstimator(t *testing.T) {
	var e bdpEstimator
	t0 := time.Unix(0, 0)
	if got := e.sample(t0, 0, 0); got != 0 {
		t.Fatalf("first sample: %d, want 0", got)
	}
	// 100 MB/s with a 20 ms RTT: twice the RTT's worth of bytes.
	if got := e.sample(t0.Add(100*time.Millisecond), 10e6, 20); got != 4e6 {
		t.Fatalf("100 MB/s, 20 ms: %d, want %d", got, int(4e6))
	}
	// A slower sample does not lower the rate (the largest of the last
	// eight counts); a larger RTT does not raise the smallest.
	if got := e.sample(t0.Add(200*time.Millisecond), 11e6, 40); got != 4e6 {
		t.Fatalf("after a slow sample: %d, want %d", got, int(4e6))
	}
	// On a short path the queue target sets the floor of the time.
	var f bdpEstimator
	f.sample(t0, 0, 0.01)
	want := int(1e8 * queueTarget.Seconds())
	if got := f.sample(t0.Add(10*time.Millisecond), 1e6, 0.01); got < want-1 || got > want+1 {
		t.Fatalf("100 MB/s, 10 µs: %d, want %d", got, want)
	}
	for range len(e.rates) {
		t0 = t0.Add(time.Second)
		e.sample(t0, 11e6, 20)
	}
	if got := e.sample(t0.Add(time.Second), 11e6, 20); got != 0 {
		t.Fatalf("after eight idle samples: %d, want 0", got)
	}
}

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
// credit taken for fragments never sent was given back. The bulk messages
// are as long, so that the scheduler, which serves the message with the
// fewest bytes left first, keeps the 1 MiB ones waiting while a bulk one is
// under way.
func TestSendCancelledMidMessage(t *testing.T) {
	d, l := testPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	bulk := make([]byte, 1<<20)
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

// TestSchedulerShortestFirst sends a 16 MiB message on each of two streams
// at once and checks that, when the first has been handed to pion whole,
// the other has had little: the scheduler sends the message with the fewest
// bytes left first, so the first begun is sent whole before the next, where
// turns of a fragment each would send both together. (The other still gets
// room while the first waits for credit, as when the receiver's grants are
// late.)
func TestSchedulerShortestFirst(t *testing.T) {
	d, l := testPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := make([]byte, 16<<20)
	var (
		mu    sync.Mutex
		other = -1 // bytes the other stream had sent when the first Send returned
	)
	var wg sync.WaitGroup
	for s := range 2 {
		wg.Go(func() {
			if err := d.Send(ctx, s, msg); err != nil {
				t.Errorf("Send on stream %d: %v", s, err)
			}
			o := d.send[1-s]
			o.mu.Lock()
			sent := int(o.sent)
			o.mu.Unlock()
			mu.Lock()
			if other < 0 {
				other = sent
			}
			mu.Unlock()
		})
		wg.Go(func() {
			if m, err := l.Recv(ctx, s); err != nil || len(m) != len(msg) {
				t.Errorf("Recv on stream %d: %d bytes, %v", s, len(m), err)
			}
		})
	}
	wg.Wait()
	t.Logf("when the first message was sent, the other had sent %d of %d bytes", other, len(msg))
	if other > len(msg)/2 {
		t.Errorf("when the first message was sent, the other had sent %d of %d bytes: want at most half (turns of a fragment each send nearly all)", other, len(msg))
	}
}

// TestSchedulerCreditWaitHoldsNoOne stalls a large message on stream 0 for
// credit (its receiver holds an unread message there) and checks that a
// longer one on stream 1 is sent all the same: a stream waiting for credit
// is not kept room for, however few bytes it has left.
func TestSchedulerCreditWaitHoldsNoOne(t *testing.T) {
	d, l := testPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if err := d.Send(ctx, 0, []byte("unread")); err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { d.Send(ctx, 0, make([]byte, 12<<20)) })
	for {
		ss := d.send[0]
		ss.mu.Lock()
		stalled := ss.sent+maxFragment+fragHeaderLen > ss.limit && ss.sent > 1<<20
		ss.mu.Unlock()
		if stalled {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("stream 0 never ran out of credit")
		case <-time.After(time.Millisecond):
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 15*time.Second)
	defer scancel()
	wg.Go(func() {
		if err := d.Send(sctx, 1, make([]byte, 16<<20)); err != nil {
			t.Errorf("Send on stream 1 beside a stream waiting for credit: %v", err)
		}
	})
	if m, err := l.Recv(sctx, 1); err != nil || len(m) != 16<<20 {
		t.Errorf("Recv on stream 1 beside a stream waiting for credit: %d bytes, %v", len(m), err)
	}
}

// TestSchedulerNext checks which waiting stream the scheduler serves next.
func TestSchedulerNext(t *testing.T) {
	now := time.Unix(1000, 0)
	type w struct {
		left int
		age  time.Duration
	}
	for _, c := range []struct {
		name     string
		queue    []w           // longest waiting first
		coming   []int         // bytes left per stream while it is coming
		lastAged time.Duration // how long ago a stream was last served for its wait; 0: never
		want     int
		aged     bool
	}{
		{"the fewest bytes left", []w{{100, 3}, {50, 2}, {70, 1}}, nil, 0, 1, false},
		{"the longest waiting among equals", []w{{100, 3}, {50, 2}, {50, 1}}, nil, 0, 1, false},
		{"held for a coming stream with fewer left", []w{{100, 3}, {50, 2}}, []int{0, 0, 10}, 0, -1, false},
		{"not held for one with as many left", []w{{100, 3}, {50, 2}}, []int{0, 0, 50}, 0, 1, false},
		{"the longest waiting once it has waited maxPassed", []w{{100, maxPassed}, {50, 2}}, nil, 0, 0, true},
		{"the longest waiting before a coming stream too", []w{{100, maxPassed}, {50, 2}}, []int{0, 0, 10}, 0, 0, true},
		{"one served for its wait per maxPassed", []w{{100, 2 * maxPassed}, {50, maxPassed}}, nil, maxPassed / 2, 1, false},
		{"the next once maxPassed has passed", []w{{100, 2 * maxPassed}, {50, maxPassed}}, nil, maxPassed, 0, true},
	} {
		q := &scheduler{coming: make([]int, 3)}
		copy(q.coming, c.coming)
		if c.lastAged > 0 {
			q.lastAged = now.Add(-c.lastAged)
		}
		for i, x := range c.queue {
			q.queue = append(q.queue, &waiter{s: i, left: x.left, since: now.Add(-x.age)})
		}
		if got, aged := q.nextLocked(now); got != c.want || aged != c.aged {
			t.Errorf("%s: got %d (for its wait: %v), want %d (%v)", c.name, got, aged, c.want, c.aged)
		}
	}
}

// TestLimitFor: the limit is the floor plus the bandwidth-delay product,
// at most cwnd; with a controller that bounds cwnd by its model (bbr,
// cubic) it follows cwnd, with a quarter of the limit to spare beyond it:
// pion has data for cwnd to take between the waiters' wakeups, which come
// once a quarter of the limit has drained.
func TestLimitFor(t *testing.T) {
	const floor = 128 << 10
	for _, tc := range []struct {
		bdp, cwnd int
		model     bool
		want      int
	}{
		{1 << 20, 4 << 20, false, floor + 1<<20},
		{4 << 20, 1 << 20, false, floor + 1<<20},
		{64 << 20, 64 << 20, false, floor + maxLimit},
		{1 << 20, 3 << 20, true, floor + 4<<20},
		{8 << 20, 3 << 20, true, floor + 4<<20},
		{64 << 20, 64 << 20, true, floor + maxLimit},
	} {
		got := limitFor(floor, tc.bdp, tc.cwnd, tc.model)
		if got != tc.want {
			t.Errorf("limitFor(bdp %d, cwnd %d, model %v) = %d, want %d", tc.bdp, tc.cwnd, tc.model, got, tc.want)
		}
		if tc.model && tc.cwnd*4/3 < maxLimit && got-tc.cwnd < got/4 {
			t.Errorf("cwnd %d: %d beyond it, under a quarter of the limit %d", tc.cwnd, got-tc.cwnd, got)
		}
	}
}

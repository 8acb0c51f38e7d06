package transporttest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

func testClose(t *testing.T, s *suite) {
	for _, closerIsDialer := range []bool{true, false} {
		name := map[bool]string{true: "dialer closes", false: "listener closes"}[closerIsDialer]
		t.Run(name, func(t *testing.T) { closeCase(t, s, closerIsDialer) })
	}
}

func closeCase(t *testing.T, s *suite, closerIsDialer bool) {
	const n, count = 3, 50
	lc, _ := listenCfg(t, n, n)
	var released atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		return n, func() { released.Add(1) }, nil
	}
	d, l := s.connect(t, s.listen(t, lc), dialCfg(n, n))
	closer, peer := d, l
	if !closerIsDialer {
		closer, peer = l, d
	}
	ctx := timeoutCtx(t, 10*time.Second)
	msgs := [][]byte{pattern(1<<20, 1)}
	for i := range count {
		msgs = append(msgs, pattern(1000+i, uint64(i)))
	}
	var wg sync.WaitGroup
	for st := range n { // receive while sending: flow-control windows may be small
		wg.Go(func() { drainUntilClosed(ctx, t, peer, st, len(msgs)) })
	}
	for st := range n {
		for _, m := range msgs {
			if err := closer.Send(ctx, st, m); err != nil {
				t.Fatalf("Send: %v", err)
			}
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- closer.Close() }()
	wg.Wait()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s")
	}
	waitDone(t, closer, 5*time.Second)
	waitDone(t, peer, 5*time.Second)
	if !errors.Is(peer.Err(), transport.ErrPeerClosed) {
		t.Errorf("peer Err() = %v, want ErrPeerClosed", peer.Err())
	}
	if closer.Err() == nil {
		t.Errorf("closer Err() = nil after Close")
	}
	if err := closer.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	peer.Close()
	waitCount(t, &released, 1, "release calls")
}

// drainUntilClosed receives count messages on stream st, then expects
// ErrPeerClosed.
func drainUntilClosed(ctx context.Context, t *testing.T, peer transport.Association, st, count int) {
	for i := range count {
		if _, err := peer.Recv(ctx, st); err != nil {
			t.Errorf("stream %d: message %d sent before Close was lost: %v", st, i, err)
			return
		}
	}
	if _, err := peer.Recv(ctx, st); !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("stream %d: Recv after peer's Close = %v, want ErrPeerClosed", st, err)
	}
}

func testAbort(t *testing.T, s *suite) {
	for _, dialerAborts := range []bool{true, false} {
		name := map[bool]string{true: "dialer aborts", false: "listener aborts"}[dialerAborts]
		t.Run(name, func(t *testing.T) { abortCase(t, s, dialerAborts) })
	}
}

func abortCase(t *testing.T, s *suite, dialerAborts bool) {
	lc, _ := listenCfg(t, 2, 2)
	var released atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		return n, func() { released.Add(1) }, nil
	}
	d, l := s.connect(t, s.listen(t, lc), dialCfg(2, 2))
	ab, peer := d, l
	if !dialerAborts {
		ab, peer = l, d
	}
	localRecv := make(chan error, 1)
	go func() {
		_, err := ab.Recv(context.Background(), 1)
		localRecv <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ab.Abort(errors.New("transporttest: deliberate abort"))
	ctx := timeoutCtx(t, 2*time.Second)
	if _, err := peer.Recv(ctx, 0); !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("peer Recv after Abort = %v, want ErrPeerClosed promptly", err)
	}
	waitDone(t, peer, 2*time.Second)
	waitDone(t, ab, 2*time.Second)
	select {
	case err := <-localRecv:
		if !errors.Is(err, transport.ErrClosed) {
			t.Errorf("blocked Recv on the aborting side = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Error("Abort did not unblock a local Recv")
	}
	if err := ab.Send(ctx, 0, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after Abort = %v, want ErrClosed", err)
	}
	ab.Abort(nil)
	waitCount(t, &released, 1, "release calls")
}

func testUseAfterClose(t *testing.T, s *suite) {
	d, _ := s.pair(t, 2)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := timeoutCtx(t, 2*time.Second)
	if err := d.Send(ctx, 0, []byte("x")); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if _, err := d.Recv(ctx, 1); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Recv after Close = %v, want ErrClosed", err)
	}
}

func testCancelRecv(t *testing.T, s *suite) {
	d, l := s.pair(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := l.Recv(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Recv with cancelled ctx = %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("Recv took %v to notice cancellation", el)
	}
	echoOnce(t, d, l, 1)
}

func testCancelSend(t *testing.T, s *suite) {
	d, l := s.pair(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := make(chan struct{}, 1)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		msg := pattern(256<<10, 3)
		for {
			if err := d.Send(ctx, 0, msg); err != nil {
				errc <- err
				return
			}
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	})
	if !waitStall(progress, 300*time.Millisecond, 10*time.Second) {
		t.Fatal("Send never blocked although the peer does not read")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("blocked Send after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		d.Abort(errTestDone)
		t.Error("cancelling ctx did not unblock a blocked Send")
	}
	_ = l
}

func testTooLarge(t *testing.T, s *suite) {
	d, l := s.pair(t, 1)
	ctx := timeoutCtx(t, 5*time.Second)
	err := d.Send(ctx, 0, make([]byte, transport.MaxMessageSize+1))
	if !errors.Is(err, transport.ErrMessageTooLarge) {
		t.Errorf("Send of MaxMessageSize+1 bytes = %v, want ErrMessageTooLarge", err)
	}
	echoOnce(t, d, l, 0)
}

func testBadStream(t *testing.T, s *suite) {
	d, l := s.pair(t, 2)
	ctx := timeoutCtx(t, 5*time.Second)
	for _, st := range []int{-1, 2, 1000} {
		if err := d.Send(ctx, st, []byte("x")); !errors.Is(err, transport.ErrBadStream) {
			t.Errorf("Send on stream %d = %v, want ErrBadStream", st, err)
		}
		if _, err := l.Recv(ctx, st); !errors.Is(err, transport.ErrBadStream) {
			t.Errorf("Recv on stream %d = %v, want ErrBadStream", st, err)
		}
	}
	echoOnce(t, d, l, 1)
}

func testGarbage(t *testing.T, s *suite) {
	if s.opts.Garbage == nil {
		t.Skip("no Options.Garbage hook for this transport")
	}
	lc, _ := listenCfg(t, 2, 2)
	var admits atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		admits.Add(1)
		return n, nil, nil
	}
	ln := s.listen(t, lc)
	addr := ln.Addr().String()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := s.opts.Garbage(addr); err != nil {
				t.Logf("garbage hook: %v", err)
			}
		})
	}
	d, l := s.connect(t, ln, dialCfg(2, 2))
	echoOnce(t, d, l, 1)
	wg.Wait()
	d2, l2 := s.connect(t, ln, dialCfg(2, 2))
	echoOnce(t, d2, l2, 0)
	if got := admits.Load(); got != 2 {
		t.Errorf("Admit called %d times, want 2 (garbage must never be admitted)", got)
	}
}

// testAbortWhileStalled: the listener leaves stream 0 unread until its
// receive side is full, then the dialer aborts. The listener must still see
// the end promptly — on the other streams and on Done — and release its
// threads, however its receive path is blocked.
func testAbortWhileStalled(t *testing.T, s *suite) {
	lc, _ := listenCfg(t, 2, 2)
	var released atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		return n, func() { released.Add(1) }, nil
	}
	d, l := s.connect(t, s.listen(t, lc), dialCfg(2, 2))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := make(chan struct{}, 1)
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		flood(ctx, d, 0, progress)
	}()
	waitStall(progress, 300*time.Millisecond, 3*time.Second)
	d.Abort(errors.New("transporttest: abort while the peer is stalled"))
	cancel()
	<-flooded
	rctx := timeoutCtx(t, 5*time.Second)
	_, err := l.Recv(rctx, 1)
	if !s.independent() {
		// One ordered byte stream: the abort waits behind the unread data,
		// like everything else (head-of-line blocking). Closing locally
		// must still end it.
		t.Logf("%s: abort not seen behind unread stream 0 (head-of-line blocking): %v", s.tr.Name(), err)
		l.Abort(errTestDone)
		waitDone(t, l, 5*time.Second)
		return
	}
	if !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("Recv on another stream after the peer aborted = %v, want ErrPeerClosed", err)
	}
	waitDone(t, l, 5*time.Second)
	waitCount(t, &released, 1, "release calls")
}

// testCloseDuringSend: Close while a large message is still being sent
// delivers that message whole before the peer sees the end. The pair
// talks over the test path, whose tap tells when the message is under
// way: Close comes once three quarters of it have crossed, so that what is
// left takes a loaded machine well under the transports' 5 s CloseTimeout
// (the whole 16 MiB took over 5 s through the relay with both cores
// busy), while the sender still has some of it to write (on tcp the
// kernel's buffers sometimes take the rest first).
func testCloseDuringSend(t *testing.T, s *suite) {
	if s.opts.NarrowBlackHole {
		// Through it the send timed out at 135 s in two runs; the
		// case's earlier form over the direct pair (close after a fixed
		// 5 ms) passed here, but judged a race, not the transport.
		t.Skip("the test path (Options.BlackHole) is too narrow to carry the 16 MiB message in time")
	}
	lc, _ := listenCfg(t, 2, 2)
	ln := s.listen(t, lc)
	path := s.opts.BlackHole(t, s.tr, ln.Addr().String())
	if path.Tap == nil {
		t.Skip("the test path (Options.BlackHole) has no Tap to see the message under way with")
	}
	var crossed atomic.Int64
	d, l := connectWith(t, ln, path.Dial, dialCfg(2, 2))
	path.Tap(func(p []byte) { crossed.Add(int64(len(p))) })
	closeDuringSend(t, s, d, l, func(ctx context.Context, n int) {
		for crossed.Load() < int64(n)*3/4 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
	})
}

// closeDuringSend sends a 16 MiB message from d, closes d once started
// says it is under way (started waits, given the send's context and the
// message's length), and checks that the send succeeds, l gets the whole
// message and then ErrPeerClosed.
func closeDuringSend(t *testing.T, s *suite, d, l transport.Association, started func(ctx context.Context, n int)) {
	big := pattern(16<<20, 7)
	ctx := timeoutCtx(t, s.opTimeout())
	sent := make(chan error, 1)
	go func() { sent <- d.Send(ctx, 0, big) }()
	got := make(chan []byte, 1)
	go func() {
		p, _ := l.Recv(ctx, 0)
		got <- p
	}()
	started(ctx, len(big))
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	if err := <-sent; err != nil {
		t.Fatalf("Send under way when Close began = %v, want nil (Close delivers it)", err)
	}
	if p := <-got; !bytes.Equal(p, big) {
		t.Fatalf("peer got %d bytes, want the whole %d-byte message", len(p), len(big))
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := l.Recv(ctx, 0); !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("Recv after the peer closed = %v, want ErrPeerClosed", err)
	}
}

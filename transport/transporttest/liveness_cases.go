package transporttest

import (
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// The Liveness cases; see the package comment. Each end configures the
// suite's liveness bound L. A lost peer must be noticed within 2L + 1 s of
// going silent (generous: loaded machines, emulators) and not before L/2
// (the last sign of life may precede the silence by a third of L).

func (s *suite) lossDeadline() time.Duration { return 2*s.opts.Liveness + time.Second }

// aliveBound is the bound of the cases whose peer is alive: at least 2 s,
// so that a scheduling stall of a loaded machine (a -race garbage
// collection, parallel test packages on two cores) is not taken for a
// silent peer. They last 2.5 such bounds.
func (s *suite) aliveBound() time.Duration { return max(s.opts.Liveness, 2*time.Second) }

// liveCfgs are the dial and listen configs of the Liveness cases, the
// listener counting its release calls.
func (s *suite) liveCfgs(t testing.TB, released *atomic.Int64) (transport.DialConfig, transport.ListenConfig) {
	dc := dialCfg(2, 2)
	dc.Liveness = s.opts.Liveness
	lc, _ := listenCfg(t, 2, 2)
	lc.Liveness = s.opts.Liveness
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		return n, func() { released.Add(1) }, nil
	}
	return dc, lc
}

// pendingRecv starts a Recv on stream 1 that only the end of a can finish.
func pendingRecv(a transport.Association) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := a.Recv(context.Background(), 1)
		ch <- err
	}()
	return ch
}

// wantLost waits for a to end after its peer went silent at since, checks
// that it ended with ErrPeerLost (and ErrPeerClosed) neither too early nor
// too late, and that recv, a Recv pending meanwhile, failed the same way.
// It returns how long detection took.
func (s *suite) wantLost(t *testing.T, who string, a transport.Association, since time.Time, recv <-chan error) time.Duration {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(s.lossDeadline() - time.Since(since)):
		t.Fatalf("%s: association with a silent peer still open %v after the silence began (liveness %v)",
			who, time.Since(since).Round(time.Millisecond), s.opts.Liveness)
	}
	took := time.Since(since)
	err := a.Err()
	if !errors.Is(err, transport.ErrPeerLost) || !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("%s: Err() = %v, want one wrapping ErrPeerLost and ErrPeerClosed", who, err)
	}
	if took < s.opts.Liveness/2 {
		t.Errorf("%s: peer declared lost %v after the silence began, liveness %v", who, took, s.opts.Liveness)
	}
	select {
	case rerr := <-recv:
		if !errors.Is(rerr, transport.ErrPeerLost) {
			t.Errorf("%s: pending Recv = %v, want ErrPeerLost", who, rerr)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s: pending Recv still blocked after the association ended", who)
	}
	t.Logf("%s: peer lost after %v (liveness %v): %v", who, took.Round(time.Millisecond), s.opts.Liveness, err)
	return took
}

// testBlackHole: the path between two live ends is cut: both must end with
// ErrPeerLost within the bound, and the listener must release its threads.
func testBlackHole(t *testing.T, s *suite) {
	var released atomic.Int64
	dc, lc := s.liveCfgs(t, &released)
	ln := s.listen(t, lc)
	path := s.opts.BlackHole(t, s.tr, ln.Addr().String())
	d, l := connectWith(t, ln, path.Dial, dc)
	echoOnce(t, d, l, 0)
	drecv, lrecv := pendingRecv(d), pendingRecv(l)
	path.Block(true)
	since := time.Now()
	s.wantLost(t, "dialer", d, since, drecv)
	s.wantLost(t, "listener", l, since, lrecv)
	waitCount(t, &released, 1, "release calls")
}

// testFrozen: the peer is a process of its own, frozen with SIGSTOP after a
// message went both ways; its kernel keeps the connection open. Both as
// listener and as dialer it must be declared lost within the bound.
func testFrozen(t *testing.T, s *suite) {
	t.Run("listener", func(t *testing.T) {
		if peerRole() != "" {
			runPeer(t, s)
			return
		}
		p := startPeer(t, "listen", "", s.opts.Liveness)
		var released atomic.Int64
		dc, _ := s.liveCfgs(t, &released)
		d, err := s.tr.Dial(timeoutCtx(t, 10*time.Second), p.addr, dc)
		if err != nil {
			t.Fatalf("dial the peer process: %v", err)
		}
		t.Cleanup(func() { d.Abort(errTestDone) })
		echoThrough(t, d)
		recv := pendingRecv(d)
		p.freeze(t)
		s.wantLost(t, "dialer", d, time.Now(), recv)
	})
	t.Run("dialer", func(t *testing.T) {
		if peerRole() != "" {
			runPeer(t, s)
			return
		}
		var released atomic.Int64
		_, lc := s.liveCfgs(t, &released)
		ln := s.listen(t, lc)
		p := startPeer(t, "dial", ln.Addr().String(), s.opts.Liveness)
		l, err := ln.Accept(timeoutCtx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("accept the peer process: %v", err)
		}
		t.Cleanup(func() { l.Abort(errTestDone) })
		echoThrough(t, l)
		recv := pendingRecv(l)
		p.freeze(t)
		s.wantLost(t, "listener", l, time.Now(), recv)
		waitCount(t, &released, 1, "release calls")
	})
}

// echoThrough sends a message on stream 0 to a peer process that echoes it.
func echoThrough(t testing.TB, a transport.Association) {
	t.Helper()
	ctx := timeoutCtx(t, 10*time.Second)
	if err := a.Send(ctx, 0, []byte("are you there")); err != nil {
		t.Fatalf("Send to the peer process: %v", err)
	}
	if m, err := a.Recv(ctx, 0); err != nil || string(m) != "are you there" {
		t.Fatalf("echo from the peer process: %q, %v", m, err)
	}
}

// testIdleIsAlive: two live ends idle for 2.5 bounds stay up.
func testIdleIsAlive(t *testing.T, s *suite) {
	var released atomic.Int64
	dc, lc := s.liveCfgs(t, &released)
	dc.Liveness, lc.Liveness = s.aliveBound(), s.aliveBound()
	d, l := s.connect(t, s.listen(t, lc), dc)
	time.Sleep(s.aliveBound() * 5 / 2)
	for who, a := range map[string]transport.Association{"dialer": d, "listener": l} {
		if err := a.Err(); err != nil {
			t.Fatalf("%s: idle association with a live peer ended: %v", who, err)
		}
	}
	echoOnce(t, d, l, 1)
}

// testStalledReaderIsAlive: the dialer sends on stream 0 until flow control
// blocks it while the listener does not read that stream for 2.5 bounds.
// Neither end may take the other for lost, and every message arrives, in
// order, once the listener reads again.
func testStalledReaderIsAlive(t *testing.T, s *suite) {
	var released atomic.Int64
	dc, lc := s.liveCfgs(t, &released)
	dc.Liveness, lc.Liveness = s.aliveBound(), s.aliveBound()
	d, l := s.connect(t, s.listen(t, lc), dc)
	ctx := timeoutCtx(t, s.opTimeout())
	stop := make(chan struct{})
	progress := make(chan struct{}, 1)
	sent := make(chan uint64, 1)
	go func() { sent <- sendNumbered(ctx, d, stop, progress) }()
	if !waitStall(progress, 300*time.Millisecond, 5*time.Second) {
		t.Logf("the sender never stalled; the reader stalls anyway")
	}
	time.Sleep(s.aliveBound() * 5 / 2)
	close(stop)
	for who, a := range map[string]transport.Association{"dialer": d, "listener": l} {
		if err := a.Err(); err != nil {
			t.Fatalf("%s: association ended while the listener's reader stalled: %v", who, err)
		}
	}
	var next uint64
	for {
		m, err := l.Recv(ctx, 0)
		if err != nil {
			t.Fatalf("Recv message %d after the stall: %v", next, err)
		}
		if len(m) == 1 {
			break // the sender's end marker
		}
		if len(m) != numberedSize || binary.BigEndian.Uint64(m) != next {
			t.Fatalf("message %d after the stall: %d bytes numbered %d", next, len(m), binary.BigEndian.Uint64(m))
		}
		next++
	}
	if n := <-sent; n != next {
		t.Fatalf("received %d messages, the dialer sent %d", next, n)
	}
	t.Logf("%d messages of %d bytes waited out the stall", next, numberedSize)
	echoOnce(t, d, l, 1)
}

const numberedSize = 64 << 10

// sendNumbered sends numbered messages on stream 0 until stop closes (or
// ctx ends), then an end marker, reporting each Send on progress. It
// returns how many numbered messages it sent.
func sendNumbered(ctx context.Context, a transport.Association, stop <-chan struct{}, progress chan<- struct{}) uint64 {
	msg := make([]byte, numberedSize)
	var n uint64
	for {
		select {
		case <-stop:
			_ = a.Send(ctx, 0, []byte{0})
			return n
		default:
		}
		binary.BigEndian.PutUint64(msg, n)
		if a.Send(ctx, 0, msg) != nil {
			return n
		}
		n++
		select {
		case progress <- struct{}{}:
		default:
		}
	}
}

package transporttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

func testNegotiate(t *testing.T, s *suite) {
	// want = min(max(rec_d, rec_l), max_d, max_l); zero rec means 1, zero max means MaxStreams.
	tests := []struct{ recD, maxD, recL, maxL, want int }{
		{1, 1, 1, 1, 1},
		{2, 8, 4, 8, 4},
		{6, 8, 2, 3, 3},
		{0, 0, 3, 0, 3},
		{5, 5, 1, 16, 5},
	}
	for _, tc := range tests {
		want := tc.want
		lc, _ := listenCfg(t, tc.recL, tc.maxL)
		var admitted atomic.Int64
		lc.Admit = func(p transport.PeerInfo, n int) (int, func(), error) {
			admitted.Store(int64(n))
			if p.Name != "dialer" {
				t.Errorf("Admit peer name %q, want %q", p.Name, "dialer")
			}
			return n, nil, nil
		}
		d, l := s.connect(t, s.listen(t, lc), dialCfg(tc.recD, tc.maxD))
		if d.Streams() != want || l.Streams() != want || admitted.Load() != int64(want) {
			t.Errorf("offers %+v: streams dialer=%d listener=%d admit n=%d, want %d",
				tc, d.Streams(), l.Streams(), admitted.Load(), want)
		}
		if d.Peer().Name != "listener" || l.Peer().Name != "dialer" {
			t.Errorf("peer names: dialer sees %q, listener sees %q", d.Peer().Name, l.Peer().Name)
		}
		if d.Err() != nil || l.Err() != nil {
			t.Errorf("Err on open association: %v / %v", d.Err(), l.Err())
		}
		if d.LocalAddr() == nil || d.RemoteAddr() == nil || l.LocalAddr() == nil || l.RemoteAddr() == nil {
			t.Errorf("nil addresses")
		}
		d.Abort(errTestDone)
		l.Abort(errTestDone)
	}
}

func testAdmitCaps(t *testing.T, s *suite) {
	lc, _ := listenCfg(t, 6, 6)
	var released atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		return n - 4, func() { released.Add(1) }, nil
	}
	d, l := s.connect(t, s.listen(t, lc), dialCfg(6, 6))
	if d.Streams() != 2 || l.Streams() != 2 {
		t.Fatalf("streams dialer=%d listener=%d, want 2 granted", d.Streams(), l.Streams())
	}
	echoOnce(t, d, l, 1)
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitDone(t, l, 5*time.Second)
	waitCount(t, &released, 1, "release calls")
}

func testAdmitRefuses(t *testing.T, s *suite) {
	lc, lg := listenCfg(t, 2, 2)
	var released, admits atomic.Int64
	lc.Admit = func(transport.PeerInfo, int) (int, func(), error) {
		if admits.Add(1) == 1 {
			return 0, func() { released.Add(1) }, errors.New("no free threads")
		}
		return 1, nil, nil
	}
	ln := s.listen(t, lc)
	ctx := timeoutCtx(t, 10*time.Second)
	a, err := s.tr.Dial(ctx, ln.Addr().String(), dialCfg(2, 2))
	if err == nil {
		a.Abort(errTestDone)
		t.Fatal("Dial succeeded although Admit refused")
	}
	if !errors.Is(err, transport.ErrRefused) {
		t.Errorf("Dial error %v, want one wrapping ErrRefused", err)
	}
	if !lg.waitFor(transport.ErrRefused.Error(), 3*time.Second) {
		t.Errorf("listener did not log the refusal")
	}
	// The listener keeps serving.
	d, l := s.connect(t, ln, dialCfg(2, 2))
	echoOnce(t, d, l, 0)
	if released.Load() != 0 {
		t.Errorf("release called %d times for a refused association", released.Load())
	}
}

func testWrongSecret(t *testing.T, s *suite) {
	lc, lg := listenCfg(t, 2, 2)
	var admits atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		admits.Add(1)
		return n, nil, nil
	}
	ln := s.listen(t, lc)
	accepted := make(chan transport.Association, 1)
	actx, cancel := context.WithCancel(context.Background())
	go func() {
		a, err := ln.Accept(actx)
		if err == nil {
			accepted <- a
		}
		close(accepted)
	}()
	dc := dialCfg(2, 2)
	dc.Secret = []byte("some other secret")
	a, err := s.tr.Dial(timeoutCtx(t, 10*time.Second), ln.Addr().String(), dc)
	if err == nil {
		a.Abort(errTestDone)
		t.Error("Dial with a wrong secret succeeded")
	} else if !errors.Is(err, transport.ErrAuth) {
		t.Errorf("Dial error %v, want one wrapping ErrAuth", err)
	}
	if !lg.waitFor(transport.ErrAuth.Error(), 3*time.Second) {
		t.Errorf("listener did not log an error wrapping ErrAuth")
	}
	cancel()
	if a, ok := <-accepted; ok {
		a.Abort(errTestDone)
		t.Error("Accept returned an unauthenticated association")
	}
	if admits.Load() != 0 {
		t.Errorf("Admit called %d times for an unauthenticated peer", admits.Load())
	}
}

// testRefusalsAggregated: refused peers are each reported to Refused, but
// logged a line per source address per interval: refusalDials dials with a
// wrong secret from one address give one line at once and, when the
// listener closes (or the interval ends), one saying how many more came.
func testRefusalsAggregated(t *testing.T, s *suite) {
	const refusalDials = 12
	lc, lg := listenCfg(t, 1, 1)
	var refused atomic.Int64
	lc.Refused = func(_ net.Addr, err error) {
		refused.Add(1)
		if !errors.Is(err, transport.ErrAuth) {
			t.Errorf("Refused with %v, want an error wrapping ErrAuth", err)
		}
	}
	ln := s.listen(t, lc)
	dc := dialCfg(1, 1)
	dc.Secret = []byte("some other secret")
	for i := range refusalDials {
		if a, err := s.tr.Dial(timeoutCtx(t, 10*time.Second), ln.Addr().String(), dc); err == nil {
			a.Abort(errTestDone)
			t.Fatalf("dial %d with a wrong secret succeeded", i)
		}
	}
	waitCount(t, &refused, refusalDials, "refused peers")
	if n := lg.count(); n != 1 {
		t.Errorf("%d log lines for %d refused peers from one address within the interval, want 1:\n%s", n, refusalDials, lg.text())
	}
	ln.Close()
	want := fmt.Sprintf("%d more like it from ", refusalDials-1)
	if !lg.waitFor(want, 3*time.Second) || lg.count() != 2 {
		t.Errorf("after Close: want a second line saying %q, got:\n%s", want, lg.text())
	}
}

// echoOnce sends one message each way on stream s.
func echoOnce(t testing.TB, d, l transport.Association, s int) {
	t.Helper()
	ctx := timeoutCtx(t, 5*time.Second)
	for _, p := range [][2]transport.Association{{d, l}, {l, d}} {
		if err := p[0].Send(ctx, s, []byte("ping")); err != nil {
			t.Fatalf("Send: %v", err)
		}
		m, err := p[1].Recv(ctx, s)
		if err != nil || string(m) != "ping" {
			t.Fatalf("Recv = %q, %v; want ping", m, err)
		}
	}
}

func waitDone(t testing.TB, a transport.Association, d time.Duration) {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(d):
		t.Fatalf("Done not closed within %v", d)
	}
}

func waitCount(t testing.TB, c *atomic.Int64, want int64, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if got := c.Load(); got != want {
		t.Errorf("%s: %d, want %d", what, got, want)
	}
}

// testForgedMAC runs the dialer's side of the handshake by hand, with the
// right secret but a tampered MAC in its auth message: the dialer checks
// the listener's proof and passes, so only the listener's check of the
// dialer's proof (the one before Admit) stands between a peer that cannot
// compute the MAC and the worker. It must reject the peer, log ErrAuth, and
// never call Admit or return an association.
func testForgedMAC(t *testing.T, s *suite) {
	if s.opts.Channel == nil {
		t.Skipf("transport %s supplies no Options.Channel: cannot run a forged handshake", s.tr.Name())
	}
	lc, lg := listenCfg(t, 2, 2)
	var admits atomic.Int64
	lc.Admit = func(_ transport.PeerInfo, n int) (int, func(), error) {
		admits.Add(1)
		return n, nil, nil
	}
	ln := s.listen(t, lc)
	accepted := make(chan transport.Association, 1)
	actx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		a, err := ln.Accept(actx)
		if err == nil {
			accepted <- a
		}
		close(accepted)
	}()
	ctx := timeoutCtx(t, 10*time.Second)
	hc, closeCh, err := s.opts.Channel(ctx, ln.Addr().String())
	if err != nil {
		t.Fatalf("Channel: %v", err)
	}
	_, err = transport.DialHandshake(ctx, &forgeAuth{HandshakeConn: hc}, dialCfg(2, 2))
	if err == nil {
		t.Error("the listener accepted a handshake whose dialer MAC was forged")
	}
	if !lg.waitFor(transport.ErrAuth.Error(), 3*time.Second) {
		t.Errorf("listener did not log an error wrapping ErrAuth")
	}
	closeCh()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if a, ok := <-accepted; ok {
		a.Abort(errTestDone)
		t.Error("Accept returned an association whose dialer forged its MAC")
	}
	if admits.Load() != 0 {
		t.Errorf("Admit called %d times for a dialer with a forged MAC", admits.Load())
	}
}

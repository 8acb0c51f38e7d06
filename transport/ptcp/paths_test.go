package ptcp_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/transporttest"
)

// TestTwoPaths stripes one stream over two emulated paths of unequal rate
// between two network namespaces (root, Linux; skips elsewhere): the
// listener in braid-a takes connections on both of its addresses, the
// dialer in braid-b sends its second connection by the second path
// (Config.Routes). The message must arrive whole, with each path having
// carried a share of it: under pollall in proportion to its rate (the
// faster path most), under rr about half each. The seed's throughput
// claims are measured by `braid bench transport --net`
// (docs/experiments/net-stripes), not here.
func TestTwoPaths(t *testing.T) {
	bed := transporttest.UpBed(t, "rtt=4ms,rate=60M; rtt=6ms,rate=15M")
	a1, _ := netem.PathAddrs(1)
	msg := bytes.Repeat([]byte("0123456789abcdef"), 6<<20/16)
	for i, driver := range []string{ptcp.DriverPollAll, ptcp.DriverRR} {
		t.Run(driver, func(t *testing.T) {
			tr := newT(t, ptcp.Config{Driver: driver, RecStripes: 2, Routes: []string{a1.String()}})
			d, l := transporttest.AcrossBed(t, tr, 47600+i)
			share := transporttest.PathShares(t, bed, d, l, msg)[1]
			t.Logf("%s: the 15 Mbit/s path carried %.0f%% of the bytes", driver, 100*share)
			lo, hi := 0.05, 0.4 // pollall: about 15/75
			if driver == ptcp.DriverRR {
				lo, hi = 0.4, 0.6
			}
			if share < lo || share > hi {
				t.Errorf("%s: the slow path carried %.0f%% of the bytes, want %.0f%% to %.0f%%", driver, 100*share, 100*lo, 100*hi)
			}
		})
	}
}

// TestCutPath: when one of an association's two paths fails silently (the
// emulator black-holes it), the blocks on its connection never arrive, and
// the stream behind them would wait for ever while the other path keeps the
// association looking alive. Each connection must show signs of life of
// its own: both ends give up within the liveness bound (3 s), whether a
// message was under way or the association was idle (an idle stripe would
// die unnoticed too, until blocks were sent on it). The end that notices
// first ends the association with ErrPeerLost and closes its connections,
// so the other may see them closed first; both errors are ErrPeerClosed.
func TestCutPath(t *testing.T) {
	a1, _ := netem.PathAddrs(1)
	for i, busy := range []bool{true, false} {
		t.Run(map[bool]string{true: "message under way", false: "idle"}[busy], func(t *testing.T) {
			bed := transporttest.UpBed(t, "rtt=10ms,rate=50M; rtt=10ms,rate=50M")
			tr := newT(t, ptcp.Config{Driver: ptcp.DriverRR, RecStripes: 2, Routes: []string{a1.String()}})
			d, l := transporttest.AcrossBed(t, tr, 47610+i)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			msg := bytes.Repeat([]byte("0123456789abcdef"), 512<<10/16)
			transporttest.PathShares(t, bed, d, l, msg) // both paths carry blocks
			bed.Cut(1, true)
			start := time.Now()
			if busy {
				// The Send may wait for room on the cut connection, and so
				// end with the association.
				if err := d.Send(ctx, 0, msg); err != nil && !errors.Is(err, transport.ErrPeerClosed) {
					t.Fatal(err)
				}
			}
			_, err := l.Recv(ctx, 0)
			if !errors.Is(err, transport.ErrPeerClosed) {
				t.Fatalf("Recv after the cut: %v after %v; want the peer lost or gone", err, time.Since(start).Round(time.Millisecond))
			}
			t.Logf("the receiver gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
			<-l.Done()
			select {
			case <-d.Done():
				if !errors.Is(d.Err(), transport.ErrPeerClosed) {
					t.Errorf("the sender ended with %v", d.Err())
				}
				t.Logf("the sender: %v", d.Err())
			case <-ctx.Done():
				t.Fatal("the sender is still up")
			}
			if !errors.Is(l.Err(), transport.ErrPeerLost) && !errors.Is(d.Err(), transport.ErrPeerLost) {
				t.Errorf("neither end noticed the silence: %v; %v", l.Err(), d.Err())
			}
			if took := time.Since(start); took > 8*time.Second {
				t.Errorf("both ends gave up after %v, want about the 3 s liveness", took)
			}
		})
	}
}

// TestDeadRoute: a dial whose route leads to a path that is down does not
// fail. The connections meant for that path give up on it after 3 s and go
// to the dialed address, the dial says so once to DialConfig.Logf, and the
// association carries its messages on the path that is up. So a server
// reaches a worker again after a failure like TestCutPath's, while the
// path is still down.
func TestDeadRoute(t *testing.T) {
	bed := transporttest.UpBed(t, "rtt=10ms,rate=50M; rtt=10ms,rate=50M")
	a1, _ := netem.PathAddrs(1)
	bed.Cut(1, true)
	logf, lines := collectLogs()
	tr := newT(t, ptcp.Config{RecStripes: 4, Routes: []string{a1.String()}})
	start := time.Now()
	d, l := transporttest.AcrossBedWith(t, tr, 47620, func(dc *transport.DialConfig) { dc.Logf = logf })
	t.Logf("associated in %v", time.Since(start).Round(time.Millisecond))
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<20/16)
	// None of the message: the devices' own odd packet (IPv6 link-local
	// chatter) is far below 1%.
	if share := transporttest.PathShares(t, bed, d, l, msg)[1]; share > 0.01 {
		t.Errorf("the path that is down carried %.1f%% of the bytes", 100*share)
	}
	logged := lines()
	if len(logged) != 1 {
		t.Fatalf("the dial logged %q, want one line for the route %s", logged, a1)
	}
	for _, line := range logged {
		if !strings.Contains(line, "route "+a1.String()+":") {
			t.Errorf("logged %q, which does not name the route", line)
		}
	}
	t.Logf("logged: %q", logged)
}

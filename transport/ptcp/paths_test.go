package ptcp_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/netem"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
)

// TestTwoPaths stripes one stream over two emulated paths of unequal rate
// between two network namespaces (root, Linux; skips elsewhere): the
// listener in braid-a takes connections on both of its addresses, the
// dialer in braid-b sends its second connection by the second path
// (Config.Routes). The message must arrive whole, with each path having
// carried a share of it: under pollall in proportion to its rate (the
// faster path most), under rr about half each. The seed's throughput
// claims are measured by `braid bench transport --net` (see the README),
// not here.
func TestTwoPaths(t *testing.T) {
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	spec, err := netem.Parse("rtt=4ms,rate=60M; rtt=6ms,rate=15M")
	if err != nil {
		t.Fatal(err)
	}
	bed, err := netem.Up(spec, netem.Options{})
	if errors.Is(err, netem.ErrBusy) {
		t.Skipf("the WAN test bed is in use: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer bed.Close()
	a0, _ := netem.PathAddrs(0)
	a1, _ := netem.PathAddrs(1)
	secret := []byte("two paths")
	msg := bytes.Repeat([]byte("0123456789abcdef"), 6<<20/16)
	for i, driver := range []string{ptcp.DriverPollAll, ptcp.DriverRR} {
		t.Run(driver, func(t *testing.T) {
			tr := newT(t, ptcp.Config{Driver: driver, RecStripes: 2, Routes: []string{a0.String(), a1.String()}})
			var ln transport.Listener
			port := strconv.Itoa(47600 + i)
			if err := netem.InNS(netem.NSA, func() (err error) {
				ln, err = tr.Listen(net.JoinHostPort("0.0.0.0", port), transport.ListenConfig{Secret: secret, Name: "a"})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			accepted := make(chan transport.Association, 1)
			go func() {
				l, err := ln.Accept(ctx)
				if err != nil {
					t.Error(err)
				}
				accepted <- l
			}()
			var d transport.Association
			if err := netem.InNS(netem.NSB, func() (err error) {
				d, err = tr.Dial(ctx, net.JoinHostPort(a0.String(), port), transport.DialConfig{Secret: secret, Name: "b"})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer d.Abort(errors.New("test done"))
			l := <-accepted
			if l == nil {
				t.FailNow()
			}
			defer l.Abort(errors.New("test done"))
			before := bed.Stats()
			if err := d.Send(ctx, 0, msg); err != nil {
				t.Fatal(err)
			}
			got, err := l.Recv(ctx, 0)
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("received %d bytes, %v; want the %d sent", len(got), err, len(msg))
			}
			after := bed.Stats()
			fast := after[0].BA.InBytes - before[0].BA.InBytes
			slow := after[1].BA.InBytes - before[1].BA.InBytes
			share := float64(slow) / float64(fast+slow)
			t.Logf("%s: path 0 (60 Mbit/s) carried %d bytes, path 1 (15 Mbit/s) %d: %.0f%%", driver, fast, slow, 100*share)
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

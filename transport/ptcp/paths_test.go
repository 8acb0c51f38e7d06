package ptcp_test

import (
	"bytes"
	"testing"

	"github.com/braidhq/braid/internal/netem"
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
// claims are measured by `braid bench transport --net` (see the README),
// not here.
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

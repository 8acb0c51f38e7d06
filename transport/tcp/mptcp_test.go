package tcp_test

import (
	"bytes"
	"testing"

	"github.com/braidhq/braid/transport/tcp"
	"github.com/braidhq/braid/transport/transporttest"
)

// TestMPTCPTwoPaths runs a tcp association over Multipath TCP across two
// emulated paths (root, Linux; skips elsewhere), whose path manager the
// test bed sets up: the message must arrive whole, and the second path
// must have carried part of it, which plain TCP to path 0's address never
// does (checked too).
func TestMPTCPTwoPaths(t *testing.T) {
	bed := transporttest.UpBed(t, "rtt=4ms,rate=60M; rtt=6ms,rate=15M")
	msg := bytes.Repeat([]byte("0123456789abcdef"), 6<<20/16)
	for i, mptcp := range []bool{true, false} {
		d, l := transporttest.AcrossBed(t, tcp.New(tcp.Config{MPTCP: mptcp}), 47700+i)
		share := transporttest.PathShares(t, bed, d, l, msg)[1]
		t.Logf("MPTCP %v: the 15 Mbit/s path carried %.0f%% of the bytes", mptcp, 100*share)
		if mptcp && share < 0.05 {
			t.Errorf("over MPTCP the second path carried %.1f%% of the bytes, want at least 5%%", 100*share)
		}
		if !mptcp && share > 0.01 {
			t.Errorf("over plain TCP the second path carried %.1f%% of the bytes, want none", 100*share)
		}
	}
}

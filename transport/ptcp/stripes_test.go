package ptcp_test

import (
	"context"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/transporttest"
)

// sending is what a ptcp association says of its stripes.
type sending interface{ SendingStripes() int }

func stripesOf(t *testing.T, a transport.Association) int {
	t.Helper()
	s, ok := a.(sending)
	if !ok {
		t.Fatalf("%T does not say how many stripes it sends on", a)
	}
	return s.SendingStripes()
}

// pair connects a dialer of transport dt to a listener of lt on loopback.
func pair(t *testing.T, dt, lt transport.Transport) (d, l transport.Association) {
	t.Helper()
	secret := []byte("ptcp stripes test secret, 32 b!")
	ln, err := lt.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, Name: "l", RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, l, err = dialTo(ctx, t, dt, ln, transport.DialConfig{Secret: secret, Name: "d", RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	return d, l
}

// TestStripesOnLoopback: with a peer on this host auto keeps
// AutoStartStripes and does not tune, and a side with a fixed count sends
// on its own count whatever the peer recommends.
func TestStripesOnLoopback(t *testing.T) {
	auto, two := newT(t, ptcp.Config{}), newT(t, ptcp.Config{RecStripes: 2})
	d, l := pair(t, auto, auto)
	transporttest.SendBulk(t, d, l, 16<<20)
	for _, a := range []transport.Association{d, l} {
		if got := stripesOf(t, a); got != ptcp.AutoStartStripes {
			t.Errorf("auto on loopback sends on %d stripes, want %d", got, ptcp.AutoStartStripes)
		}
	}
	d, l = pair(t, two, auto)
	transporttest.SendBulk(t, d, l, 4<<20)
	if got, want := stripesOf(t, d), 2; got != want {
		t.Errorf("a dialer fixed at 2 beside an auto listener sends on %d", got)
	}
	if got := stripesOf(t, l); got != ptcp.AutoStartStripes {
		t.Errorf("the auto listener sends on %d, want %d", got, ptcp.AutoStartStripes)
	}
}

// TestStripesTuned (root, Linux; skips elsewhere): through an emulated link
// with random loss each reno connection is held by its window while the
// link idles, so auto sends on more stripes than it starts with; through a
// clean one, where one connection fills the link and queues, on the
// fewest it keeps (AutoStartStripes) or a little more (the median count
// over the transfer's second half). The receiver,
// which only acknowledged, keeps its count.
func TestStripesTuned(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulated link takes a while; not in -short")
	}
	for i, tc := range []struct {
		spec     string
		bytes    int
		min, max int
	}{
		{"rtt=40ms,loss=1%,rate=100M,cc=reno", 24 << 20, ptcp.AutoStartStripes + 2, ptcp.MaxStripes},
		{"rtt=40ms,rate=20M,cc=reno", 12 << 20, ptcp.AutoStartStripes, ptcp.AutoStartStripes + 2},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			transporttest.UpBed(t, tc.spec)
			d, l := transporttest.AcrossBed(t, newT(t, ptcp.Config{}), 47640+i)
			stripesOf(t, d) // fails here if d cannot say
			got := transporttest.SteadyCount(d.(sending).SendingStripes, func() { transporttest.SendBulk(t, d, l, tc.bytes) })
			t.Logf("the sender sent on %d stripes (median over the second half)", got)
			if got < tc.min || got > tc.max {
				t.Errorf("the sender ran %d stripes over the second half of %d MiB (median), want %d to %d", got, tc.bytes>>20, tc.min, tc.max)
			}
			if got := stripesOf(t, l); got != ptcp.AutoStartStripes {
				t.Errorf("the receiver, which only acknowledged, sends on %d stripes", got)
			}
		})
	}
}

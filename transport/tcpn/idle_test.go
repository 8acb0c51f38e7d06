package tcpn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
)

// TestIdleMixedPeers: a side that offers no idle bound (IdleFactor < 0, as
// a peer older than idle pings) and one that does keep an idle association
// up on real sockets for three liveness bounds, past the point where two
// sides that both offer one go idle; the side that offers one must not
// send idle pings to the other (a protocol violation there), and a
// message still goes through both ways.
func TestIdleMixedPeers(t *testing.T) {
	const live = 2 * time.Second // not less: a loaded machine's stalls (transporttest's aliveBound)
	for _, f := range [][2]int{{0, -1}, {-1, 0}, {0, 0}} {
		t.Run(fmt.Sprintf("dialer %d listener %d", f[0], f[1]), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			d, l := idlePair(ctx, t, f[0], f[1], live)
			time.Sleep(3 * live)
			for _, p := range [][2]transport.Association{{d, l}, {l, d}} {
				if err := p[0].Send(ctx, 0, []byte("still here")); err != nil {
					t.Fatalf("Send: %v (dialer %v, listener %v)", err, d.Err(), l.Err())
				}
				if m, err := p[1].Recv(ctx, 0); err != nil || string(m) != "still here" {
					t.Fatalf("Recv = %q, %v", m, err)
				}
			}
		})
	}
}

// idlePair is a dialed and an accepted tcpn association on loopback, the
// dialer offering idle factor dialer and the listener listener, both
// the liveness bound live; both are aborted when the test ends.
func idlePair(ctx context.Context, t *testing.T, dialer, listener int, live time.Duration) (d, l transport.Association) {
	t.Helper()
	secret := []byte("s")
	ln, err := tcpn.New(tcpn.Config{IdleFactor: listener}).Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, Liveness: live})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan transport.Association, 1)
	go func() {
		l, err := ln.Accept(ctx)
		if err != nil {
			t.Error(err)
		}
		accepted <- l
	}()
	d, err = tcpn.New(tcpn.Config{IdleFactor: dialer}).Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: secret, Liveness: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Abort(nil) })
	if l = <-accepted; l == nil {
		t.FailNow()
	}
	t.Cleanup(func() { l.Abort(nil) })
	return d, l
}

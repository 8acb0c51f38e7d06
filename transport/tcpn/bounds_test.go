package tcpn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// TestSilenceBounds: a tcpn association says the bounds it holds its peer
// to (transport.Watched), through a wrapper that unwraps: the idle bound
// (the liveness bound times the smaller idle factor) for a quiet peer, the
// liveness bound after a send; the liveness bound for both when either
// side offers no idle factor. The server links workers by them.
func TestSilenceBounds(t *testing.T) {
	const live = 200 * time.Millisecond
	for _, c := range []struct {
		dialer, listener int
		quiet            time.Duration
	}{{0, 0, 10 * live}, {4, 0, 4 * live}, {0, -1, live}} {
		t.Run(fmt.Sprintf("dialer %d listener %d", c.dialer, c.listener), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			d, l := idlePair(ctx, t, c.dialer, c.listener, live)
			for _, a := range []transport.Association{d, l, wrapped{d}} {
				if q, s := transport.SilenceBounds(a); q != c.quiet || s != live {
					t.Errorf("%T: bounds %v, %v; want %v, %v", a, q, s, c.quiet, live)
				}
			}
		})
	}
}

// wrapped wraps an association as the server's traffic counter does.
type wrapped struct{ transport.Association }

func (w wrapped) Unwrap() transport.Association { return w.Association }

package transporttest

import (
	"context"
	"testing"

	"github.com/braidhq/braid/netem/relay"
	"github.com/braidhq/braid/transport"
)

// Path is a way from a dialer to a listener that a test can cut, for
// Liveness/BlackHole, and watch, for Confidentiality.
type Path struct {
	// Dial dials the listener through the path.
	Dial func(ctx context.Context, cfg transport.DialConfig) (transport.Association, error)
	// Block cuts the path both ways (true) or restores it (false); while
	// cut, nothing gets through and nothing is closed or reset.
	Block func(on bool)
	// Tap, if set, shows every chunk of bytes or datagram the path
	// carries, either way, to fn (nil stops it); without it the
	// Confidentiality case skips.
	Tap func(fn func(p []byte))
}

// RelayPath is the default Options.BlackHole: a netem/relay forwarding
// TCP and UDP to listenAddr, dialed with tr. It is closed when t ends.
func RelayPath(t testing.TB, tr transport.Transport, listenAddr string) Path {
	t.Helper()
	r, err := relay.New(listenAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return Path{
		Dial: func(ctx context.Context, cfg transport.DialConfig) (transport.Association, error) {
			return tr.Dial(ctx, r.Addr(), cfg)
		},
		Block: r.Block,
		Tap:   r.Tap,
	}
}

package transporttest

import (
	"context"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/relay"
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

// RelayPath is the default Options.BlackHole: an internal/relay forwarding
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

// dialThrough dials ln through path and accepts the association on the
// other side; both are aborted when t ends.
func dialThrough(t testing.TB, ln transport.Listener, path Path, dc transport.DialConfig) (d, l transport.Association) {
	t.Helper()
	ctx := timeoutCtx(t, 10*time.Second)
	type accepted struct {
		a   transport.Association
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		a, err := ln.Accept(ctx)
		acc <- accepted{a, err}
	}()
	d, err := path.Dial(ctx, dc)
	if err != nil {
		t.Fatalf("dial through the path: %v", err)
	}
	t.Cleanup(func() { d.Abort(errTestDone) })
	r := <-acc
	if r.err != nil {
		t.Fatalf("accept: %v", r.err)
	}
	t.Cleanup(func() { r.a.Abort(errTestDone) })
	return d, r.a
}

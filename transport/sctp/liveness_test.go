package sctp

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// TestKeepAlive: an idle association stays up for many liveness periods on
// the heartbeats alone. Once the dialer's socket is gone underneath it
// (nothing more arrives, as with a killed or frozen process), the
// listener's association ends with ErrPeerLost and releases its threads.
func TestKeepAlive(t *testing.T) {
	const bound = 300 * time.Millisecond
	tr := New(Config{})
	var released atomic.Int64
	lc := transport.ListenConfig{Secret: secret, RecStreams: 2, MaxStreams: 2, Liveness: bound,
		Admit: func(_ transport.PeerInfo, n int) (int, func(), error) { return n, func() { released.Add(1) }, nil }}
	d, la := loopbackPair(t, tr, lc, transport.DialConfig{Secret: secret, RecStreams: 2, MaxStreams: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	time.Sleep(5 * bound)
	for _, a := range []transport.Association{d, la} {
		if err := a.Err(); err != nil {
			t.Fatalf("idle association with a live peer ended: %v", err)
		}
	}
	start := time.Now()
	_ = d.(*Association).conn.(*dconn).sock.close()
	select {
	case <-la.Done():
	case <-time.After(10 * bound):
		t.Fatal("association with a silent peer still open")
	}
	if took := time.Since(start); took < bound/2 {
		t.Errorf("declared lost %v after the peer went silent, bound %v", took, bound)
	}
	if err := la.Err(); !errors.Is(err, transport.ErrPeerLost) || !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("Err() = %v, want ErrPeerLost and ErrPeerClosed", err)
	}
	if _, err := la.Recv(ctx, 0); !errors.Is(err, transport.ErrPeerLost) {
		t.Errorf("Recv after the loss = %v, want ErrPeerLost", err)
	}
	for deadline := time.Now().Add(5 * time.Second); released.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // release runs once the teardown is complete
	}
	if released.Load() != 1 {
		t.Errorf("release ran %d times, want 1", released.Load())
	}
}

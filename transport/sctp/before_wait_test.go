package sctp

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// TestSealedBeforeWait: a sealed conn's ReadPacket runs the hook pion's
// read loop set (SetBeforeWait) only when it has no datagram at hand,
// before it waits, not between the packets of what it has; and a conn to
// a peer on this host declines the hook.
func TestSealedBeforeWait(t *testing.T) {
	d, l := loopbackPair(t, New(Config{TLS: transport.TLSOn}), transport.ListenConfig{Secret: secret}, transport.DialConfig{Secret: secret})
	dc, lc := sealedOf(d), sealedOf(l)
	if dc == nil || dc.rec == nil || lc == nil || lc.rec == nil {
		t.Fatal("the ends do not seal their own records")
	}
	if dc.SetBeforeWait(func() {}) || dc.beforeWait != nil {
		t.Fatal("a conn to a peer on this host took the hook")
	}

	// Read what the listener seals through a conn of the dialer's kind
	// over a queue of its own (a second reader of d's conn would race
	// pion's).
	raw := newPconn(&mux{lender: newLender()}, netip.MustParseAddrPort("192.0.2.1:9"))
	c := &sealedConn{raw: raw, mux: newRecordMux(raw), rec: dc.rec, fwd: make(chan struct{})}
	c.mux.fast.Store(true)
	hooks := 0
	c.beforeWait = func() {
		if raw.ready() {
			t.Error("the hook ran with a datagram at hand")
		}
		hooks++
	}
	var want [][]byte
	for range 3 {
		p := chunkPacket(chunkHeartbeat)
		rec, err := lc.rec.sealRecord(nil, p)
		if err != nil {
			t.Fatal(err)
		}
		rb := &rxBuf{b: rec}
		rb.refs.Store(1)
		raw.deliver(packet{p: rec, rb: rb})
		want = append(want, p)
	}
	for i, w := range want {
		got, err := c.ReadPacket()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w) {
			t.Fatalf("packet %d: % x, want % x", i, got, w)
		}
	}
	if hooks != 0 {
		t.Fatalf("the hook ran %d times while packets were at hand", hooks)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadPacket(); !isTimeout(err) {
		t.Fatalf("ReadPacket of an empty queue: %v, want a timeout", err)
	}
	if hooks != 1 {
		t.Fatalf("the hook ran %d times before the read waited, want 1", hooks)
	}
}

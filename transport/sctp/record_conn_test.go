package sctp

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// sealedOf returns the DTLS conn under an association's port and kernel
// wrappers, or nil.
func sealedOf(a transport.Association) *sealedConn {
	c := a.(*Association).conn
	for {
		switch w := c.(type) {
		case *sealedConn:
			return w
		case *portConn:
			c = w.Conn
		case kernelConn:
			c = w.Conn
		default:
			return nil
		}
	}
}

// TestDTLSRecordsMixed: an end that seals and opens its records itself
// (record.go) and one that leaves them to pion/dtls, as braid releases
// before it did, carry messages both ways; so do two of the first kind.
func TestDTLSRecordsMixed(t *testing.T) {
	for _, c := range []struct {
		name         string
		dial, listen bool // the end leaves its records to pion/dtls
	}{
		{"both seal", false, false},
		{"dialer leaves them to pion/dtls", true, false},
		{"listener leaves them to pion/dtls", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			lt := New(Config{TLS: transport.TLSOn, pionRecords: c.listen})
			dt := New(Config{TLS: transport.TLSOn, pionRecords: c.dial})
			ln, err := lt.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			acc := make(chan transport.Association, 1)
			go func() {
				a, _ := ln.Accept(ctx)
				acc <- a
			}()
			d, err := dt.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: secret})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Abort(nil)
			l := <-acc
			if l == nil {
				t.Fatal("no association accepted")
			}
			defer l.Abort(nil)
			for _, e := range []struct {
				a    transport.Association
				pion bool
			}{{d, c.dial}, {l, c.listen}} {
				sc := sealedOf(e.a)
				if sc == nil || (sc.rec == nil) != e.pion {
					t.Fatalf("%s: sealed conn %v, records its own: %v", e.a.LocalAddr(), sc != nil, sc != nil && sc.rec != nil)
				}
			}
			big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: hundreds of records
			for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
				for _, msg := range [][]byte{[]byte("small"), big} {
					errc := make(chan error, 1)
					go func() { errc <- dir[0].Send(ctx, 0, msg) }()
					got, err := dir[1].Recv(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, msg) {
						t.Fatalf("%s → %s: %d bytes came as %d", dir[0].LocalAddr(), dir[1].LocalAddr(), len(msg), len(got))
					}
					if err := <-errc; err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// TestSealedReadDeadline: a read deadline that pion/sctp sets (its Abort
// does, to end its read loop) ends the fast path's read, and one that
// has not passed does not.
func TestSealedReadDeadline(t *testing.T) {
	d, _ := loopbackPair(t, New(Config{TLS: transport.TLSOn}), transport.ListenConfig{Secret: secret}, transport.DialConfig{Secret: secret})
	sc := sealedOf(d)
	if sc == nil || sc.rec == nil {
		t.Fatal("the dialer does not seal its own records")
	}
	// A second reader of the conn would race pion's: read through a conn
	// of the same kind over a socket of its own instead.
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c := sealedOverUDP(t, uc, sc.rec)
	c.mux.fast.Store(true)
	start := time.Now() // before the deadline is set: it is 50 ms from no later than this
	if err := c.SetReadDeadline(start.Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadPacket(); err == nil {
		t.Fatal("ReadPacket returned a packet from a silent socket")
	} else if !isTimeout(err) {
		t.Fatalf("ReadPacket: %v, want a timeout", err)
	}
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("ReadPacket returned after %v, before its deadline", waited)
	}
	// A packet from pion/dtls wakes a read with no deadline.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		p, _ := c.ReadPacket()
		got <- p
	}()
	pkt := chunkPacket(chunkHeartbeat)
	c.mux.fromPion(pkt)
	select {
	case p := <-got:
		if !bytes.Equal(p, pkt) {
			t.Fatalf("read % x, want % x", p, pkt)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a packet from pion/dtls did not wake the reader")
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// sealedOverUDP is a sealedConn that seals and opens records with rec over
// a conn of its own on uc, none of pion's, closed when the test ends: a
// test's own reader or writer of what an end seals.
func sealedOverUDP(t *testing.T, uc *net.UDPConn, rec *recordCrypt) *sealedConn {
	t.Helper()
	raw, err := newDconn(uc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return &sealedConn{raw: raw, mux: newRecordMux(raw), rec: rec, fwd: make(chan struct{})}
}

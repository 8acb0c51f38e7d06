package sctp

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// soloBed is a started mux on loopback and UDP sockets that send to it.
type soloBed struct {
	t *testing.T
	m *mux
}

func newSoloBed(t *testing.T) *soloBed {
	t.Helper()
	b := newIdleSoloBed(t)
	b.m.start()
	return b
}

// newIdleSoloBed is newSoloBed with the mux's loop not started.
func newIdleSoloBed(t *testing.T) *soloBed {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMux(pc, 8, initTemplate{}, func(*pconn) {}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.sock.close() })
	return &soloBed{t: t, m: m}
}

// peer returns a socket that sends to the mux, and the mux's conn for it,
// counted as a peer on another host if remote.
func (b *soloBed) peer(remote bool) (*net.UDPConn, *pconn) {
	b.t.Helper()
	uc, err := net.DialUDP("udp", nil, b.m.sock.localAddr())
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = uc.Close() })
	c := newPconn(b.m, uc.LocalAddr().(*net.UDPAddr).AddrPort())
	c.local.Store(2)
	if remote {
		c.local.Store(1)
	}
	b.m.mu.Lock()
	b.m.conns[c.raddr] = c
	b.m.setSoloLocked()
	b.m.mu.Unlock()
	return uc, c
}

// expect has c's next datagram be want.
func (b *soloBed) expect(c *pconn, want []byte) {
	b.t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		b.t.Fatal(err)
	}
	pk, err := c.next()
	if err != nil {
		b.t.Fatalf("next: %v", err)
	}
	defer pk.rb.release()
	if !bytes.Equal(pk.p, want) {
		b.t.Fatalf("next: %q, want %q", pk.p, want)
	}
}

func send(t *testing.T, uc *net.UDPConn, p string) {
	t.Helper()
	if _, err := uc.Write([]byte(p)); err != nil {
		t.Fatal(err)
	}
}

// holder is the conn that has the socket, nil for the mux's loop.
func (b *soloBed) holder() *pconn {
	b.m.lender.mu.Lock()
	defer b.m.lender.mu.Unlock()
	return b.m.lender.holder
}

// expectBorrowed has c's next datagram be p, sent once c's reader waits
// on the socket itself.
func (b *soloBed) expectBorrowed(c *pconn, uc *net.UDPConn, p string) {
	b.t.Helper()
	got := make(chan packet, 1)
	go func() {
		pk, err := c.next()
		if err != nil {
			b.t.Errorf("next: %v", err)
		}
		got <- pk
	}()
	waitFor(b.t, func() bool {
		b.m.lender.mu.Lock()
		defer b.m.lender.mu.Unlock()
		return b.m.lender.holder == c && b.m.lender.reading
	})
	send(b.t, uc, p)
	pk := <-got
	if pk.rb == nil {
		b.t.FailNow()
	}
	defer pk.rb.release()
	if string(pk.p) != p {
		b.t.Fatalf("next: %q, want %q", pk.p, p)
	}
}

// TestSoloReadsSocket: a listener's sole association with a peer on
// another host reads the socket itself; it gives the socket back to the
// mux's loop when a second association comes (whose datagrams the mux
// then routes, and the first's too), and borrows it again when that one
// has gone.
func TestSoloReadsSocket(t *testing.T) {
	b := newSoloBed(t)
	u1, c1 := b.peer(true)
	send(t, u1, "one")
	b.expect(c1, []byte("one"))
	b.expectBorrowed(c1, u1, "two")

	u2, c2 := b.peer(true)
	send(t, u2, "to c2")
	send(t, u1, "three")
	b.expect(c1, []byte("three"))
	b.expect(c2, []byte("to c2"))
	if c1.borrowed.Load() || c2.borrowed.Load() || b.holder() != nil {
		t.Fatal("with two associations, one of them kept or took the socket")
	}

	_ = c2.Close()
	send(t, u1, "four")
	b.expect(c1, []byte("four"))
	b.expectBorrowed(c1, u1, "five")
}

// TestSoloLocalPeer: an association with a peer on this host leaves the
// socket to the mux's loop.
func TestSoloLocalPeer(t *testing.T) {
	b := newSoloBed(t)
	u, c := b.peer(false)
	for _, p := range []string{"one", "two"} {
		send(t, u, p)
		b.expect(c, []byte(p))
	}
	if c.borrowed.Load() || b.holder() != nil {
		t.Fatal("an association with a local peer took the socket")
	}
}

// TestSoloGivesBack: a sole association that has the socket gives it back
// when its read deadline passes (with a timeout, as from its queue), when
// it closes while its reader waits, and when it closes between reads; the
// mux's loop then routes again.
func TestSoloGivesBack(t *testing.T) {
	b := newSoloBed(t)
	u1, c1 := b.peer(true)
	send(t, u1, "one")
	b.expect(c1, []byte("one"))

	if err := c1.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c1.next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("next past the deadline: %v, want a timeout", err)
	}
	if b.holder() != nil {
		t.Fatal("the socket stayed with an association whose deadline passed")
	}

	if err := c1.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	b.expectBorrowed(c1, u1, "two")
	done := make(chan error, 1)
	go func() {
		_, err := c1.next()
		done <- err
	}()
	waitFor(t, func() bool { b.m.lender.mu.Lock(); defer b.m.lender.mu.Unlock(); return b.m.lender.reading })
	_ = c1.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("next of a closed conn: %v, want net.ErrClosed", err)
	}
	if b.holder() != nil {
		t.Fatal("a closed association kept the socket")
	}

	u2, c2 := b.peer(true)
	b.expectBorrowed(c2, u2, "three")
	_ = c2.Close() // between reads
	u3, c3 := b.peer(false)
	send(t, u3, "four")
	b.expect(c3, []byte("four"))
	if b.holder() != nil {
		t.Fatal("an association closed between reads kept the socket")
	}
}

// TestSoloClosedReaderGone: a sole association that closes while its
// reader holds the socket, the reader never to read again (pion's read
// loop ends on an ABORT), gives the socket back: the mux's loop serves the
// listener's next association. The reader holds the socket either having
// just read a packet of its own from it, or having just been lent it with
// a packet the mux's loop had queued for it.
func TestSoloClosedReaderGone(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		b := newSoloBed(t)
		u1, c1 := b.peer(true)
		send(t, u1, "one")
		b.expect(c1, []byte("one"))
		b.m.lender.ownRead = func() { _ = c1.Close() } // as pion's Close would, now
		b.expectBorrowed(c1, u1, "two")
		b.servesNext(c1)
	})
	t.Run("lent", func(t *testing.T) {
		b := newIdleSoloBed(t)
		_, c1 := b.peer(true)
		got := make(chan packet, 1)
		go func() {
			pk, err := c1.next()
			if err != nil {
				t.Errorf("next: %v", err)
			}
			got <- pk
		}()
		waitFor(t, func() bool { b.m.lender.mu.Lock(); defer b.m.lender.mu.Unlock(); return b.m.lender.want == c1 })
		// The mux's loop routes one more packet to c1 before it sees the
		// borrow's deadline and lends c1's reader the socket.
		rb := &rxBuf{b: []byte("one"), segs: 1}
		rb.refs.Store(1)
		b.m.route(c1.raddr, packet{p: rb.b, rb: rb, from: c1.raddr})
		b.m.start()
		if pk := <-got; string(pk.p) != "one" {
			t.Fatalf("next: %q, want %q", pk.p, "one")
		}
		if b.holder() != c1 {
			t.Fatal("c1's reader was not lent the socket")
		}
		_ = c1.Close()
		b.servesNext(c1)
	})
}

// servesNext has the mux's loop serve a new association once closed c's
// reader has left.
func (b *soloBed) servesNext(c *pconn) {
	b.t.Helper()
	if !c.isClosed() {
		b.t.Fatal("c is open")
	}
	u, next := b.peer(false)
	send(b.t, u, "next")
	b.expect(next, []byte("next"))
	if b.holder() != nil {
		b.t.Fatal("a closed association kept the socket")
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

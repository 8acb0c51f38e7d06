package sctp

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/transporttest"
)

func TestLingerFor(t *testing.T) {
	for _, c := range []struct{ rtt, want time.Duration }{
		{0, 0},
		{100 * time.Microsecond, 0}, // loopback
		{3 * time.Millisecond, 0},   // a LAN: not worth a timer
		{4 * time.Millisecond, 250 * time.Microsecond},
		{20 * time.Millisecond, 1250 * time.Microsecond},
		{50 * time.Millisecond, maxLinger},
		{time.Second, maxLinger},
	} {
		if got := lingerFor(c.rtt); got != c.want {
			t.Errorf("lingerFor(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}

// chunkPacket is an SCTP packet whose first chunk has type typ.
func chunkPacket(typ byte) []byte {
	return sctpPacket(pionPort, pionPort, []byte{typ, 0, 0, 4})
}

func TestRTTClock(t *testing.T) {
	t.Run("dialer", func(t *testing.T) {
		var k rttClock
		k.got(chunkPacket(chunkInitAck)) // before any INIT: no sample
		k.sent(chunkPacket(chunkInit))
		time.Sleep(20 * time.Millisecond)
		k.got(chunkPacket(chunkCookieEcho + 1)) // COOKIE-ACK (11): not timed
		if k.get() != 0 {
			t.Fatalf("timed by a COOKIE-ACK: %v", k.get())
		}
		k.got(chunkPacket(chunkInitAck))
		if got := k.get(); got < 20*time.Millisecond || got > time.Second {
			t.Fatalf("INIT to INIT-ACK took %v, want about 20ms", got)
		}
		first := k.get()
		k.sent(chunkPacket(chunkInit))
		k.got(chunkPacket(chunkInitAck))
		if k.get() != first {
			t.Errorf("a second exchange changed the sample from %v to %v", first, k.get())
		}
	})
	t.Run("listener, INIT-ACK retransmitted", func(t *testing.T) {
		var k rttClock
		k.got(chunkPacket(chunkInit))
		k.sent(chunkPacket(chunkInitAck))
		time.Sleep(30 * time.Millisecond)
		k.sent(chunkPacket(chunkInitAck)) // the retransmission restarts the clock
		k.got(chunkPacket(chunkCookieEcho))
		if got := k.get(); got <= 0 || got >= 30*time.Millisecond {
			t.Errorf("INIT-ACK to COOKIE-ECHO after a retransmission took %v, want under 30ms", got)
		}
	})
}

// TestReaderLingers checks receive coalescing on a socket pair: a packet
// after an idle spell is read at once, and packets that follow within the
// linger wait and are read together, in one batch; with no linger each is
// read as it comes.
func TestReaderLingers(t *testing.T) {
	const linger = 150 * time.Millisecond
	for _, d := range []time.Duration{0, linger} {
		tx, rx := socketPair(t)
		rx.linger.Store(int64(d))
		send := func(n int) {
			if _, err := tx.uc.Write(bytes.Repeat([]byte{byte(n)}, n)); err != nil {
				t.Error(err)
			}
		}
		read := func(want int) {
			t.Helper()
			p, err := rx.rd.next()
			if err != nil {
				t.Fatal(err)
			}
			if len(p.p) != want {
				t.Fatalf("read a packet of %d bytes, want %d", len(p.p), want)
			}
			p.rb.release()
		}
		time.Sleep(linger + 50*time.Millisecond) // idle, whatever came before
		start := time.Now()
		send(100)
		read(100)
		if took := time.Since(start); took >= linger {
			t.Errorf("linger %v: a packet after an idle spell took %v to read", d, took)
		}
		go func() { // growing sizes, so that UDP GRO cannot merge them
			for _, n := range []int{200, 300, 400} {
				send(n)
				time.Sleep(5 * time.Millisecond)
			}
		}()
		read(200)
		batch := rx.rd.n
		read(300)
		read(400)
		if d > 0 && batch != 3 {
			t.Errorf("linger %v: the packets that followed were read in a batch of %d, want all 3", d, batch)
		}
		if d == 0 && batch != 1 {
			t.Errorf("no linger: the packets that followed were read in a batch of %d, want 1 (as each came)", batch)
		}
	}
}

// TestMuxLingersForShortestPath checks that a listener's shared socket
// lingers as long as its shortest path's association asks, ignoring
// associations that have not asked yet.
func TestMuxLingersForShortestPath(t *testing.T) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	m := newMux(pc, 8, func(*pconn) {}, t.Logf)
	defer func() { _ = m.sock.close() }()
	conns := make([]*pconn, 3)
	for i := range conns {
		conns[i] = newPconn(m, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(1000+i)))
		m.conns[conns[i].raddr] = conns[i]
	}
	check := func(want time.Duration) {
		t.Helper()
		if got := time.Duration(m.sock.linger.Load()); got != want {
			t.Errorf("the socket lingers %v, want %v", got, want)
		}
	}
	conns[0].setLinger(2 * time.Millisecond)
	check(2 * time.Millisecond)
	conns[1].setLinger(time.Millisecond)
	check(time.Millisecond)
	conns[2].setLinger(0) // a loopback peer
	check(0)
	m.remove(conns[2])
	check(time.Millisecond)
}

// TestLoopbackDoesNotLinger checks that an association on loopback
// measures its handshake and does not coalesce on either end.
func TestLoopbackDoesNotLinger(t *testing.T) {
	d, l := loopbackPair(t)
	for _, a := range []transport.Association{d, l} {
		c := a.(*Association).conn.(assocConn)
		if rtt := c.handshakeRTT(); rtt <= 0 || rtt > time.Second {
			t.Errorf("%s: handshake RTT %v", a.LocalAddr(), rtt)
		}
	}
	time.Sleep(100 * time.Millisecond) // past coalesce's first look at pion's RTT
	if got := d.(*Association).conn.(*dconn).sock.linger.Load(); got != 0 {
		t.Errorf("the dialer lingers %v on loopback", time.Duration(got))
	}
	if got := l.(*Association).conn.(*pconn).m.sock.linger.Load(); got != 0 {
		t.Errorf("the listener lingers %v on loopback", time.Duration(got))
	}
}

// loopbackPair is an association between two ends on loopback, closed
// when t ends.
func loopbackPair(t *testing.T) (d, l transport.Association) {
	t.Helper()
	tr := New(Config{})
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acc := make(chan transport.Association, 1)
	go func() {
		a, _ := ln.Accept(ctx)
		acc <- a
	}()
	d, err = tr.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Abort(nil) })
	if l = <-acc; l == nil {
		t.Fatal("no association accepted")
	}
	t.Cleanup(func() { l.Abort(nil) })
	return d, l
}

// TestLingerOnLongPath runs an association across the emulated 20 ms path
// (root, Linux; skips elsewhere): both ends measure the handshake's RTT,
// linger a sixteenth of it, and carry a message whole.
func TestLingerOnLongPath(t *testing.T) {
	transporttest.UpBed(t, "rtt=20ms,rate=100M")
	d, l := transporttest.AcrossBed(t, New(Config{}), 47620)
	for _, a := range []transport.Association{d, l} {
		c := a.(*Association).conn.(assocConn)
		raw := net.Conn(c)
		if sc, ok := c.(*sealedConn); ok { // DTLS, as between hosts by default
			raw = sc.raw
		}
		var sock *udpSocket
		if dc, ok := raw.(*dconn); ok {
			sock = dc.sock
		} else {
			sock = raw.(*pconn).m.sock
		}
		rtt := c.handshakeRTT()
		if rtt < 20*time.Millisecond || rtt > 200*time.Millisecond {
			t.Errorf("%s: handshake RTT %v on a 20 ms path", a.LocalAddr(), rtt)
		}
		if got, want := time.Duration(sock.linger.Load()), lingerFor(rtt); got != want || want == 0 {
			t.Errorf("%s: lingers %v, want %v", a.LocalAddr(), got, want)
		}
	}
	msg := bytes.Repeat([]byte("coalesced"), 1<<20/9)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		if err := d.Send(ctx, 0, msg); err != nil {
			t.Error(err)
		}
	}()
	got, err := l.Recv(ctx, 0)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("received %d bytes (err %v), want the %d sent", len(got), err, len(msg))
	}
}

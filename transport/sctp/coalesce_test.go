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
		{3 * time.Millisecond, 0},   // a LAN
		{7 * time.Millisecond, 0},   // not worth a timer
		{8 * time.Millisecond, time.Millisecond},
		{20 * time.Millisecond, 2 * time.Millisecond},
		{32 * time.Millisecond, 4 * time.Millisecond},
		{50 * time.Millisecond, 4 * time.Millisecond}, // the bed's WAN
		{time.Second, maxLinger},
	} {
		if got := lingerFor(c.rtt); got != c.want {
			t.Errorf("lingerFor(%v) = %v, want %v", c.rtt, got, c.want)
		}
	}
}

// TestPathRTT: the delay is sized from the smaller of the two samples,
// each of which can only be too long, and from nothing while one is
// missing.
func TestPathRTT(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct{ hs, pion, want time.Duration }{
		{0, 20 * ms, 0},
		{20 * ms, 0, 0},
		{50 * ms, 20 * ms, 20 * ms},  // a busy peer answered the handshake late
		{20 * ms, 200 * ms, 20 * ms}, // pion's samples so far were delayed SACKs
	} {
		if got := pathRTT(c.hs, c.pion); got != c.want {
			t.Errorf("pathRTT(%v, %v) = %v, want %v", c.hs, c.pion, got, c.want)
		}
	}
}

func TestNextLinger(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		set, rtt, want time.Duration
		ok             bool
	}{
		{-1, 0, 0, false},            // not measured: nothing to set
		{-1, 10 * ms, ms, true},      // first measure
		{-1, 5 * ms, 0, true},        // a short path: none, but said
		{2 * ms, 10 * ms, ms, true},  // a shorter path seen: shrink
		{ms, 40 * ms, 4 * ms, false}, // never grow
		{0, 40 * ms, 4 * ms, false},
	} {
		if got, ok := nextLinger(c.set, c.rtt); ok != c.ok || (ok && got != c.want) {
			t.Errorf("nextLinger(%v, %v) = %v, %v; want %v, %v", c.set, c.rtt, got, ok, c.want, c.ok)
		}
	}
}

func TestIsLocal(t *testing.T) {
	for _, ip := range []string{"127.0.0.1", "127.0.3.4", "::1"} {
		if !isLocal(&net.UDPAddr{IP: net.ParseIP(ip), Port: 1}) {
			t.Errorf("%s is not local", ip)
		}
	}
	if isLocal(&net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}) { // TEST-NET-1
		t.Error("192.0.2.1 is local")
	}
	ifas, _ := net.InterfaceAddrs()
	for _, ifa := range ifas {
		if n, ok := ifa.(*net.IPNet); ok && !n.IP.IsLoopback() && !isLocal(&net.UDPAddr{IP: n.IP, Port: 1}) {
			t.Errorf("this host's %s is not local", n.IP)
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
			if err := (&flusher{}).sendOne(tx, outPacket{b: bytes.Repeat([]byte{byte(n)}, n)}); err != nil {
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
		send(50) // a batch that was not full, so that the next read may wait
		read(50)
		time.Sleep(linger + 50*time.Millisecond) // then an idle spell
		waits := rx.rd.lingered
		send(100)
		read(100)
		if rx.rd.lingered != waits {
			t.Errorf("linger %v: the read of a packet after an idle spell waited", d)
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
		// A full batch means more may be waiting: the next read is at once.
		time.Sleep(linger + 50*time.Millisecond)
		for i := range readBatch + 1 {
			send(500 + i)
		}
		for i := range readBatch {
			read(500 + i)
		}
		waits = rx.rd.lingered
		read(500 + readBatch)
		if rx.rd.lingered != waits {
			t.Errorf("linger %v: the read after a full batch waited", d)
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
	m, err := newMux(pc, 8, initTemplate{}, func(*pconn) {}, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
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
	d, l := loopbackPair(t, New(Config{}), transport.ListenConfig{Secret: secret}, transport.DialConfig{Secret: secret})
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

// loopbackPair is an association of tr between two ends on loopback,
// aborted when t ends.
func loopbackPair(t *testing.T, tr transport.Transport, lc transport.ListenConfig, dc transport.DialConfig) (d, l transport.Association) {
	t.Helper()
	ln, err := tr.Listen("127.0.0.1:0", lc)
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
	d, err = tr.Dial(ctx, ln.Addr().String(), dc)
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
// carry a message whole, and linger a sixteenth of the smaller of that RTT
// and pion's smallest sample, in whole milliseconds: 1 ms where the
// machine adds less than 12 ms to the path.
func TestLingerOnLongPath(t *testing.T) {
	transporttest.UpBed(t, "rtt=20ms,rate=100M")
	d, l := transporttest.AcrossBed(t, New(Config{}), 47620)
	msg := bytes.Repeat([]byte("coalesced"), 1<<20/9)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
			pc := raw.(*pconn)
			sock = pc.m.sock
			// The listener's sole association, its peer on another
			// host, reads the socket itself (solo.go).
			if !pc.borrowed.Load() {
				t.Errorf("%s: the listener's sole association does not read its socket", a.LocalAddr())
			}
		}
		// The path's delay counted, and no resent flight (pion waits 1 s).
		rtt := c.handshakeRTT()
		if rtt < 20*time.Millisecond || rtt >= time.Second {
			t.Errorf("%s: handshake RTT %v on a 20 ms path", a.LocalAddr(), rtt)
		}
		// The coalesce loop looks at the RTT every few seconds at most.
		var want time.Duration
		for ctx.Err() == nil {
			want = lingerFor(pathRTT(rtt, msDuration(a.(*Association).pa.MinRTT())))
			if time.Duration(sock.linger.Load()) == want {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: handshake RTT %v, pion's smallest %v ms, lingers %v", a.LocalAddr(), rtt,
			a.(*Association).pa.MinRTT(), time.Duration(sock.linger.Load()))
		if got := time.Duration(sock.linger.Load()); got != want || got < time.Millisecond {
			t.Errorf("%s: lingers %v on a 20 ms path, want %v (at least 1ms)", a.LocalAddr(), got, want)
		}
	}
}

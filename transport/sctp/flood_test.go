package sctp

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// TestINITFlood: INITs that are never followed up (as from forged source
// addresses) cost the listener no association, goroutine or handshake
// slot (it answers each with a stateless cookie), so they cannot lock a
// real dialer out: while bursts of MaxHalfOpen INITs from new source ports
// of another address keep arriving, real dials associate, and the listener
// holds no state for the flood. How fast they associate is left to
// benchmarks: a loaded machine slows the dials, not the lockout.
func TestINITFlood(t *testing.T) {
	init := sctpPacket(pionPort, pionPort, initChunk())
	binary.BigEndian.PutUint32(init[4:], 0) // an INIT's verification tag
	binary.LittleEndian.PutUint32(init[8:], 0)
	binary.LittleEndian.PutUint32(init[8:], crc32.Checksum(init, castagnoli))
	testFlood(t, New(Config{}), init)
}

// TestClientHelloFlood is TestINITFlood against a listener that takes only
// DTLS, flooded with a real DTLS ClientHello, which the listener answers
// with a HelloVerifyRequest the forger never sees.
func TestClientHelloFlood(t *testing.T) {
	testFlood(t, New(Config{TLS: transport.TLSOn}), clientHello(t))
}

// clientHello is the first datagram of a DTLS dial.
func clientHello(t *testing.T) []byte {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	uc, err := net.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		dc, err := newDconn(uc)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = dialDTLS(ctx, dc, secret, 1452, true, nil)
	}()
	b := make([]byte, 2048)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := pc.ReadFrom(b)
	cancel()
	<-done
	if err != nil || !isClientHello(b[:n]) {
		t.Fatalf("no ClientHello from a DTLS dialer: % x, %v", b[:n], err)
	}
	return b[:n]
}

func testFlood(t *testing.T, tr *Transport, init []byte) {
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	m := ln.(*Listener).m
	attacker, to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, ln.Addr().(*net.UDPAddr)
	// The flood first, alone: no association, goroutine or slot for it.
	goroutines := runtime.NumGoroutine()
	sendFlood(t, attacker, to, init, 2*tr.cfg.MaxHalfOpen)
	readAll(t, attacker, to, init)
	if conns, slots := strangerState(m); conns != 0 || slots != 0 {
		t.Fatalf("after %d forged datagrams the listener holds %d associations and %d handshake slots, want none",
			2*tr.cfg.MaxHalfOpen, conns, slots)
	}
	if n := runtime.NumGoroutine(); n > goroutines+4 {
		t.Fatalf("%d goroutines after the flood, %d before", n, goroutines)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var flooded atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			flooded.Add(int64(sendFlood(t, attacker, to, init, tr.cfg.MaxHalfOpen)))
			time.Sleep(50 * time.Millisecond)
		}
	}()
	defer func() { cancel(); <-done }()
	// The dials start once a burst is in, and the flood goes on until two
	// more have been sent, dials or not.
	waitFlooded := func(n int) {
		for flooded.Load() < int64(n) {
			select {
			case <-done:
				t.Fatalf("the flood stopped after %d datagrams", flooded.Load())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitFlooded(tr.cfg.MaxHalfOpen)
	go func() {
		for {
			a, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			defer a.Close()
		}
	}()
	for i := range 3 {
		start := time.Now()
		// Locked out, a dial would not associate at all; the minute is
		// for a loaded machine.
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		a, err := tr.Dial(dctx, ln.Addr().String(), transport.DialConfig{Secret: secret, RecStreams: 1, MaxStreams: 1})
		dcancel()
		if err != nil {
			t.Fatalf("dial %d during the flood (%d datagrams so far): %v", i, flooded.Load(), err)
		}
		t.Logf("dial %d during the flood took %v", i, time.Since(start))
		a.Close()
		if conns, slots := strangerState(m); conns != 0 || slots != 0 {
			t.Fatalf("during the flood the listener holds %d associations and %d handshake slots for it, want none", conns, slots)
		}
	}
	waitFlooded(3 * tr.cfg.MaxHalfOpen)
}

// readAll returns once the listener at to has read every datagram sent to
// it so far: it answers p, an opener, and reads datagrams in order. The
// opener goes again each second, in case the socket's buffer or the
// listener's send queue dropped it or its answer.
func readAll(t *testing.T, from, to *net.UDPAddr, p []byte) {
	c, err := net.DialUDP("udp", from, to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, 2048)
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(b); err == nil {
			return
		}
	}
	t.Fatal("no answer to an opener for a minute after the flood")
}

// sendFlood sends n copies of p to to, each from a new source port of
// from, and returns n.
func sendFlood(t *testing.T, from, to *net.UDPAddr, p []byte, n int) int {
	for range n {
		c, err := net.DialUDP("udp", from, to)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(p)
		c.Close() // the answer goes nowhere
	}
	return n
}

// strangerState counts what the listener holds for peers other than
// loopback's 127.0.0.1: associations and handshake slots.
func strangerState(m *mux) (conns, slots int) {
	m.mu.Lock()
	for a := range m.conns {
		if a.Addr() != netip.MustParseAddr("127.0.0.1") {
			conns++
		}
	}
	m.mu.Unlock()
	return conns, m.gate.Len()
}

// TestForgedFloodLogsLittle: a flood of forged INITs and ClientHellos from
// many source ports of one address costs the listener's log at most a line
// per source address per interval, not a line (or two) per datagram.
func TestForgedFloodLogsLittle(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  transport.TLSMode
		p    func(t *testing.T) []byte
	}{
		{"INIT", transport.TLSAuto, func(*testing.T) []byte {
			init := sctpPacket(pionPort, pionPort, initChunk())
			binary.BigEndian.PutUint32(init[4:], 0)
			binary.LittleEndian.PutUint32(init[8:], 0)
			binary.LittleEndian.PutUint32(init[8:], crc32.Checksum(init, castagnoli))
			return init
		}},
		{"ClientHello", transport.TLSOn, clientHello},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines atomic.Int64
			tr := New(Config{TLS: tc.tls})
			ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: 1, MaxStreams: 1,
				Logf: func(string, ...any) { lines.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			const n = 300
			sendFlood(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, ln.Addr().(*net.UDPAddr), tc.p(t), n)
			time.Sleep(time.Second) // for the listener to read, handshake and fail what it would
			if got := lines.Load(); got > 1 {
				t.Errorf("%d log lines for %d forged datagrams from one address, want at most 1", got, n)
			}
		})
	}
}

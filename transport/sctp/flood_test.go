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
// of another address arrive every 50 ms, a real dial associates within two
// seconds, and the listener holds no state for the flood.
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
		_, _ = dialDTLS(ctx, newDconn(uc), secret, 1452)
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
	attacker := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}
	// The flood first, alone: no association, goroutine or slot for it.
	goroutines := runtime.NumGoroutine()
	sendFlood(t, attacker, ln.Addr().(*net.UDPAddr), init, 2*tr.cfg.MaxHalfOpen)
	time.Sleep(100 * time.Millisecond) // let the listener read what is queued
	if conns, slots := strangerState(m); conns != 0 || slots != 0 {
		t.Fatalf("after %d forged datagrams the listener holds %d associations and %d handshake slots, want none",
			2*tr.cfg.MaxHalfOpen, conns, slots)
	}
	if n := runtime.NumGoroutine(); n > goroutines+4 {
		t.Fatalf("%d goroutines after the flood, %d before", n, goroutines)
	}
	ctx, cancel := context.WithCancel(context.Background())
	flooded := make(chan int)
	go func() {
		n := 0
		defer func() { flooded <- n }()
		for ctx.Err() == nil {
			n += sendFlood(t, attacker, ln.Addr().(*net.UDPAddr), init, tr.cfg.MaxHalfOpen)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	time.Sleep(200 * time.Millisecond) // a few bursts before the first dial
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
		dctx, dcancel := context.WithTimeout(context.Background(), 3*time.Second)
		a, err := tr.Dial(dctx, ln.Addr().String(), transport.DialConfig{Secret: secret, RecStreams: 1, MaxStreams: 1})
		dcancel()
		if err != nil {
			t.Fatalf("dial %d during the flood: %v", i, err)
		}
		// Locked out, a dial would not associate at all (the 3 s above);
		// the bound leaves room for a loaded machine.
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("dial %d during the flood took %v", i, took)
		}
		a.Close()
	}
	cancel()
	if n := <-flooded; n < 2*tr.cfg.MaxHalfOpen {
		t.Fatalf("only %d datagrams sent: not a flood", n)
	}
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

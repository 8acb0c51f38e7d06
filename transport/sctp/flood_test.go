package sctp

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// TestINITFlood: INITs that are never followed up (as from forged source
// addresses) neither hold handshake slots for long nor lock a real dialer
// out: while bursts of MaxHalfOpen INITs from new source ports of another
// address arrive every 50 ms, a real dial associates within two seconds, and
// the listener never holds more than MaxHalfOpen.
func TestINITFlood(t *testing.T) {
	init := sctpPacket(pionPort, pionPort, initChunk())
	binary.BigEndian.PutUint32(init[4:], 0) // an INIT's verification tag
	binary.LittleEndian.PutUint32(init[8:], 0)
	binary.LittleEndian.PutUint32(init[8:], crc32.Checksum(init, castagnoli))
	testFlood(t, New(Config{}), init)
}

// TestClientHelloFlood is TestINITFlood against a listener that takes only
// DTLS, flooded with a real DTLS ClientHello: each one starts a DTLS
// server, which answers with a cookie the forger never sees.
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
	// The flood comes from another address than the dialer's, as forged
	// INITs would: what one address may hold is bounded (an eighth of
	// MaxHalfOpen), so it evicts its own handshakes, not the dialer's.
	attacker := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}
	ctx, cancel := context.WithCancel(context.Background())
	flooded := make(chan int)
	go func() {
		n := 0
		defer func() { flooded <- n }()
		for ctx.Err() == nil {
			c, err := net.DialUDP("udp", attacker, ln.Addr().(*net.UDPAddr))
			if err != nil {
				return
			}
			_, _ = c.Write(init)
			c.Close() // the INIT-ACK goes nowhere
			n++
			if n%tr.cfg.MaxHalfOpen == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // let it fill the slots
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
		// the bound leaves room for a loaded machine (twice 1.1-1.5 s with
		// `make test` and other work beside it, 0.1 s alone).
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("dial %d during the flood took %v", i, took)
		}
		a.Close()
		m.mu.Lock()
		half := len(m.half)
		m.mu.Unlock()
		if half > tr.cfg.MaxHalfOpen {
			t.Fatalf("%d handshakes held, more than MaxHalfOpen %d", half, tr.cfg.MaxHalfOpen)
		}
	}
	cancel()
	if n := <-flooded; n < 2*tr.cfg.MaxHalfOpen {
		t.Fatalf("only %d datagrams sent: not a flood", n)
	}
	// Unproven handshakes go after proofWait even with no INIT to evict them.
	deadline := time.Now().Add(proofWait + 2*time.Second)
	for {
		m.mu.Lock()
		half := len(m.half)
		m.mu.Unlock()
		if half == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d unproven handshakes still held %v after the flood", half, proofWait+2*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package sctp

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/braidhq/braid/netem/relay"
)

// settledMTU waits until a's probe has finished and returns its MTU.
func settledMTU(t *testing.T, a *Association, want int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for int(a.pa.MTU()) != want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return int(a.pa.MTU())
}

// roundTrip sends a message of n bytes each way and checks it arrives.
func roundTrip(t *testing.T, d, l *Association, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := bytes.Repeat([]byte("pmtu"), n/4)
	for _, p := range [][2]*Association{{d, l}, {l, d}} {
		if err := p[0].Send(ctx, 0, msg); err != nil {
			t.Fatal(err)
		}
		got, err := p[1].Recv(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("got %d bytes, not the %d sent", len(got), len(msg))
		}
	}
}

// TestProbeRaisesMTU: on loopback both ends start at 8192 and move to the
// route's 64 KiB once their probes are answered, and data still flows.
func TestProbeRaisesMTU(t *testing.T) {
	tr := New(Config{})
	ln := listen(t, tr, 1)
	d, l := dialPair(t, tr, ln, ln.Addr().String(), 1)
	want := routeMTU(d.conn.RemoteAddr()) &^ 3
	if want <= legacyDatagram {
		t.Skipf("loopback route MTU %d: nothing to probe", want)
	}
	for name, a := range map[string]*Association{"dialer": d, "listener": l} {
		if got := settledMTU(t, a, want); got != want {
			t.Errorf("%s: MTU %d, want %d", name, got, want)
		}
	}
	roundTrip(t, d, l, 1<<20)
}

// TestProbeUnansweredKeepsMTU: through a relay that drops datagrams above
// 9000 bytes (a path that passes no IP fragments), the 64 KiB probes go
// unanswered and the association keeps the 8192 it started with; nothing
// is lost.
func TestProbeUnansweredKeepsMTU(t *testing.T) {
	tr := New(Config{probeWait: 50 * time.Millisecond})
	ln := listen(t, tr, 1)
	r, err := relay.New(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.DropUDPAbove(9000)
	d, l := dialPair(t, tr, ln, r.Addr(), 1)
	time.Sleep(2 * probeTries * tr.cfg.probeWait)
	for name, a := range map[string]*Association{"dialer": d, "listener": l} {
		if got := int(a.pa.MTU()); got != legacyDatagram {
			t.Errorf("%s: MTU %d, want %d", name, got, legacyDatagram)
		}
	}
	roundTrip(t, d, l, 1<<20)
}

// TestFixedMTUNoProbe: a configured MTU is kept.
func TestFixedMTUNoProbe(t *testing.T) {
	tr := New(Config{MTU: 1452})
	ln := listen(t, tr, 1)
	d, l := dialPair(t, tr, ln, ln.Addr().String(), 1)
	roundTrip(t, d, l, 256<<10)
	time.Sleep(100 * time.Millisecond)
	for name, a := range map[string]*Association{"dialer": d, "listener": l} {
		if got := int(a.pa.MTU()); got != 1452 {
			t.Errorf("%s: MTU %d, want 1452", name, got)
		}
	}
}

// TestProbeAnswerRecognised: the HEARTBEAT-ACK a peer makes of a probe (the
// same packet with chunk type 5) is taken, and nothing else is.
func TestProbeAnswerRecognised(t *testing.T) {
	p := newProber()
	if p.packet(1200) != nil {
		t.Fatal("a probe before pion has sent anything")
	}
	p.sent(sctpPacket(pionPort, pionPort, []byte{chunkInit, 0, 0, 4}))
	if p.hdr.Load() != 0 {
		t.Fatal("header taken from an INIT (its verification tag is 0)")
	}
	data := sctpPacket(pionPort, pionPort, []byte{0, 3, 0, 4})
	binary.BigEndian.PutUint32(data[4:], 0xfeedf00d)
	p.sent(data)
	probe := p.packet(1200)
	if len(probe) != 1200 || !checksumOK(probe) || binary.BigEndian.Uint32(probe[4:]) != 0xfeedf00d {
		t.Fatalf("bad probe: %d bytes, checksum ok %v", len(probe), checksumOK(probe))
	}
	if p.answered(probe) {
		t.Fatal("the probe itself taken for its answer")
	}
	ack := append([]byte(nil), probe...)
	ack[sctpCommonHeader] = chunkHeartbeatAck
	other := newProber()
	if other.answered(ack) {
		t.Fatal("another association's answer taken")
	}
	for _, bad := range [][]byte{ack[:probeMin-1], ack[:len(ack)-4]} {
		if p.answered(bad) {
			t.Fatalf("a truncated answer (%d bytes) taken", len(bad))
		}
	}
	if !p.answered(ack) {
		t.Fatal("answer not recognised")
	}
	if got := <-p.acks; got != 1200 {
		t.Fatalf("answer for %d bytes, want 1200", got)
	}
}

// TestProbeOnlyPion: a peer whose INIT or INIT-ACK carries a parameter pion
// does not send (the Linux kernel's ECN and address types) is not probed.
func TestProbeOnlyPion(t *testing.T) {
	ack := func(params ...[]byte) []byte {
		c := initChunk(params...)
		c[0] = chunkInitAck
		return sctpPacket(pionPort, pionPort, c)
	}
	for _, tc := range []struct {
		name    string
		pkt     []byte
		foreign bool
	}{
		{"pion INIT", sctpPacket(pionPort, pionPort, initChunk(param(0x8008, 0x82, 0xc0))), false},
		{"pion INIT-ACK", ack(param(7, 1, 2, 3, 4), param(0x8001, 0, 0, 0, 1), param(0x8008, 0x82, 0xc0)), false},
		{"kernel INIT", sctpPacket(pionPort, pionPort, initChunk(param(0x8000), param(12, 0, 5, 0, 6), param(0x8008, 0x82))), true},
		{"kernel INIT-ACK", ack(param(7, 1, 2, 3, 4), param(0x8000), param(0xc000)), true},
		{"DATA", sctpPacket(pionPort, pionPort, []byte{0, 3, 0, 4}), false},
	} {
		p := newProber()
		p.received(tc.pkt)
		if p.foreign.Load() != tc.foreign {
			t.Errorf("%s: foreign %v, want %v", tc.name, p.foreign.Load(), tc.foreign)
		}
	}
}

var _ net.Conn = kernelConn{}

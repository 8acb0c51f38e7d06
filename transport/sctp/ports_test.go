package sctp

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net"
	"testing"
)

// sctpPacket builds a packet with one chunk and a valid checksum.
func sctpPacket(src, dst uint16, chunk []byte) []byte {
	p := binary.BigEndian.AppendUint16(nil, src)
	p = binary.BigEndian.AppendUint16(p, dst)
	p = append(p, 0, 0, 0, 1, 0, 0, 0, 0) // verification tag, checksum
	p = append(p, chunk...)
	binary.LittleEndian.PutUint32(p[8:], crc32.Checksum(p, castagnoli))
	return p
}

func param(typ uint16, value ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(value)))
	b = append(b, value...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func initChunk(params ...[]byte) []byte {
	c := []byte{chunkInit, 0, 0, 0, 1, 2, 3, 4, 0, 1, 0, 0, 0, 10, 0, 10, 9, 9, 9, 9}
	for _, p := range params {
		c = append(c, p...)
	}
	binary.BigEndian.PutUint16(c[2:], uint16(len(c)))
	return c
}

func checksumOK(p []byte) bool {
	q := bytes.Clone(p)
	binary.LittleEndian.PutUint32(q[8:], 0)
	return binary.LittleEndian.Uint32(p[8:]) == crc32.Checksum(q, castagnoli)
}

// TestStripInitParams: the kernel's INIT parameters pion refuses go, the
// others stay, and lengths and checksum are right.
func TestStripInitParams(t *testing.T) {
	ecn, fwd := param(0x8000), param(0xc000)
	kernel := sctpPacket(40000, 7000, initChunk(param(5, 127, 0, 0, 1), ecn, param(12, 0, 5), fwd))
	n := stripInitParams(kernel)
	want := sctpPacket(40000, 7000, initChunk(ecn, fwd))
	if !bytes.Equal(kernel[:n], want) {
		t.Fatalf("stripped INIT\n% x\nwant\n% x", kernel[:n], want)
	}
	plain := sctpPacket(1, 2, initChunk(ecn, fwd))
	if n := stripInitParams(bytes.Clone(plain)); n != len(plain) {
		t.Fatalf("an INIT without refused parameters changed length: %d, want %d", n, len(plain))
	}
}

// FuzzStripInitParams: any input is either left alone or shrunk into a
// packet with a consistent INIT length and a valid checksum.
func FuzzStripInitParams(f *testing.F) {
	f.Add(sctpPacket(1, 2, initChunk(param(5, 1, 2, 3, 4), param(0x8000), param(12, 0, 5, 0, 6))))
	f.Add(sctpPacket(1, 2, initChunk()))
	f.Fuzz(func(t *testing.T, p []byte) {
		if len(p) <= sctpCommonHeader || p[sctpCommonHeader] != chunkInit {
			return
		}
		orig := bytes.Clone(p)
		n := stripInitParams(p)
		if n == len(orig) {
			return
		}
		if n > len(orig) || n < sctpCommonHeader+initFixedLen {
			t.Fatalf("length %d from %d", n, len(orig))
		}
		if l := int(binary.BigEndian.Uint16(p[sctpCommonHeader+2:])); l > n-sctpCommonHeader {
			t.Fatalf("INIT length %d in %d bytes", l, n)
		}
		if binary.LittleEndian.Uint32(orig[8:]) != 0 && !checksumOK(p[:n]) {
			t.Fatal("bad checksum")
		}
	})
}

// TestSetPorts: ports rewritten, checksum still valid, zero checksum kept.
func TestSetPorts(t *testing.T) {
	p := sctpPacket(pionPort, pionPort, initChunk())
	setPorts(p, 33000, 9899)
	if binary.BigEndian.Uint16(p) != 33000 || binary.BigEndian.Uint16(p[2:]) != 9899 || !checksumOK(p) {
		t.Fatalf("rewritten packet % x", p[:12])
	}
	binary.LittleEndian.PutUint32(p[8:], 0)
	setPorts(p, pionPort, pionPort)
	if binary.LittleEndian.Uint32(p[8:]) != 0 {
		t.Fatal("a zero checksum (RFC 9653) was filled in")
	}
}

// captureConn records what is written to it.
type captureConn struct {
	net.Conn
	got [][]byte
}

func (c *captureConn) Write(p []byte) (int, error) {
	c.got = append(c.got, bytes.Clone(p))
	return len(p), nil
}

// TestBareHeartbeatDropped: pion's bare HEARTBEAT never leaves; other
// packets leave untouched.
func TestBareHeartbeatDropped(t *testing.T) {
	cc := &captureConn{}
	kc := kernelConn{Conn: cc}
	bare := sctpPacket(pionPort, pionPort, []byte{chunkHeartbeat, 0, 0, 4})
	data := sctpPacket(pionPort, pionPort, []byte{0, 3, 0, 17, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 53, 'x', 0, 0, 0})
	for _, p := range [][]byte{bare, data} {
		if n, err := kc.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if len(cc.got) != 1 || !bytes.Equal(cc.got[0], data) {
		t.Fatalf("sent %d packets, want the DATA one unchanged", len(cc.got))
	}
}

// fastConn is a captureConn with the optional fast paths.
type fastConn struct {
	captureConn
	in      [][]byte
	flushes int
	before  func()
}

func (c *fastConn) Flush() error {
	c.flushes++
	return nil
}

func (c *fastConn) SetBeforeWait(f func()) bool {
	c.before = f
	return true
}

func (c *fastConn) ReadPacket() ([]byte, error) {
	p := c.in[0]
	c.in = c.in[1:]
	return p, nil
}

func (c *fastConn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	c.got = append(c.got, bytes.Clone(p))
	release(p)
	return len(p), nil
}

// TestFastPathsForwarded: the wrappers keep a conn's ReadPacket,
// WriteOwned and SetBeforeWait, with the same mending as Read and Write.
func TestFastPathsForwarded(t *testing.T) {
	fc := &fastConn{in: [][]byte{
		sctpPacket(9899, 33000, []byte{chunkInitAck, 0, 0, 4}),
		sctpPacket(40000, 7000, initChunk(param(12, 0, 5), param(0x8000))),
	}}
	pc := &portConn{Conn: fc, src: 33000, dst: 9899}
	var c net.Conn = kernelConn{Conn: pc}
	r, ok := c.(packetReader)
	w, ok2 := c.(ownedWriter)
	if !ok || !ok2 {
		t.Fatal("kernelConn hides the fast paths")
	}
	ack, _ := r.ReadPacket()
	if binary.BigEndian.Uint16(ack) != pionPort || binary.BigEndian.Uint16(ack[2:]) != pionPort || !checksumOK(ack) {
		t.Fatalf("INIT-ACK for pion: % x", ack[:12])
	}
	init, _ := r.ReadPacket()
	if want := sctpPacket(40000, 7000, initChunk(param(0x8000))); !bytes.Equal(init, want) {
		t.Fatalf("INIT for pion\n% x\nwant\n% x", init, want)
	}
	released := 0
	release := func([]byte) { released++ }
	w.WriteOwned(sctpPacket(pionPort, pionPort, []byte{chunkHeartbeat, 0, 0, 4}), release)
	w.WriteOwned(sctpPacket(pionPort, pionPort, []byte{chunkInit, 0, 0, 4}), release)
	if released != 2 || len(fc.got) != 1 {
		t.Fatalf("released %d, sent %d; want 2 and 1 (the HEARTBEAT dropped)", released, len(fc.got))
	}
	if p := fc.got[0]; binary.BigEndian.Uint16(p) != 33000 || binary.BigEndian.Uint16(p[2:]) != 9899 || !checksumOK(p) {
		t.Fatalf("sent % x", p[:12])
	}
	if err := w.Flush(); err != nil || fc.flushes != 1 {
		t.Fatalf("Flush: %v, %d flushes reached the conn; want 1", err, fc.flushes)
	}
	hooked := false
	if bw, ok := c.(beforeWaiter); !ok || !bw.SetBeforeWait(func() { hooked = true }) || fc.before == nil {
		t.Fatal("kernelConn hides SetBeforeWait")
	}
	fc.before()
	if !hooked {
		t.Fatal("the conn has another hook than the one set")
	}
	if (kernelConn{Conn: &captureConn{}}).SetBeforeWait(func() {}) {
		t.Fatal("a conn without SetBeforeWait took the hook")
	}
}

// TestRewriteKeepsBadChecksum: an INIT or INIT-ACK that arrives with a
// wrong checksum is not rewritten (which would give it a right one), so
// pion still drops it.
func TestRewriteKeepsBadChecksum(t *testing.T) {
	init := sctpPacket(40000, 7000, initChunk(param(12, 0, 5), param(0x8000)))
	init[8] ^= 0xff
	bad := bytes.Clone(init)
	if n := stripInitParams(init); n != len(bad) || !bytes.Equal(init, bad) {
		t.Fatalf("a corrupt INIT was rewritten:\n% x\nfrom\n% x", init[:n], bad)
	}
	ack := sctpPacket(9899, 33000, []byte{chunkInitAck, 0, 0, 4})
	ack[len(ack)-1] ^= 1
	bad = bytes.Clone(ack)
	fc := &fastConn{in: [][]byte{ack}}
	got, _ := (&portConn{Conn: fc, src: 33000, dst: 9899}).ReadPacket()
	if !bytes.Equal(got, bad) {
		t.Fatalf("a corrupt INIT-ACK was rewritten:\n% x\nfrom\n% x", got, bad)
	}
	if good := sctpPacket(1, 2, []byte{chunkInitAck, 0, 0, 4}); !checksumValid(good) {
		t.Fatal("checksumValid refuses a good packet")
	}
}

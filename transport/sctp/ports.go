package sctp

import (
	"encoding/binary"
	"hash/crc32"
	"net"
	"sync"
)

// SCTP ports. pion/sctp always sends SCTP source and destination port 5000
// (WebRTC's habit) and, as the initiator, ignores an INIT-ACK from other
// ports; as the listener it answers whatever ports the INIT came from.
// The kernel stack (transport/ksctp) finds associations by SCTP port, so
// every pion dialer on a host would look like the same peer to it, and a
// kernel listener would have to sit on SCTP port 5000. braid therefore
// follows one convention on both stacks: an address host:port means UDP
// port `port` carrying SCTP port `port`. A dialer's portConn rewrites
// pion's packets on the way out to SCTP ports (local UDP port, remote UDP
// port), and an INIT-ACK on the way in back to 5000/5000, fixing the
// CRC32c each time. A pion listener needs nothing: it mirrors the ports.

// pionPort is pion/sctp's fixed SCTP port.
const pionPort = 5000

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// portConn is the net.Conn a dialing pion association writes and reads
// through; see above.
type portConn struct {
	net.Conn
	src, dst uint16 // SCTP ports on the wire

	wmu  sync.Mutex // guards wbuf
	wbuf []byte
}

// dialPorts wraps a dialer's connected UDP conn.
func dialPorts(c net.Conn) net.Conn {
	la, lok := c.LocalAddr().(*net.UDPAddr)
	ra, rok := c.RemoteAddr().(*net.UDPAddr)
	if !lok || !rok {
		return c
	}
	return &portConn{Conn: c, src: uint16(la.Port), dst: uint16(ra.Port)}
}

// Write sends a copy of p with braid's ports (p is pion's and stays as is).
func (c *portConn) Write(p []byte) (int, error) {
	if len(p) < sctpCommonHeader {
		return c.Conn.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf[:0], p...)
	setPorts(c.wbuf, c.src, c.dst)
	if _, err := c.Conn.Write(c.wbuf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Read gives pion an INIT-ACK with the ports it sent its INIT from.
func (c *portConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == nil && n > sctpCommonHeader && p[sctpCommonHeader] == chunkInitAck && checksumValid(p[:n]) {
		setPorts(p[:n], pionPort, pionPort)
	}
	return n, err
}

// checksumValid reports whether b's CRC32c is right or zero (RFC 9653).
// A packet arriving with a wrong one is left as it is, for pion to drop,
// rather than given a fresh checksum by a rewrite.
func checksumValid(b []byte) bool {
	sum := binary.LittleEndian.Uint32(b[8:])
	if sum == 0 {
		return true
	}
	h := crc32.Update(0, castagnoli, b[:8])
	h = crc32.Update(h, castagnoli, []byte{0, 0, 0, 0})
	return crc32.Update(h, castagnoli, b[12:]) == sum
}

// chunkInitAck is the INIT-ACK chunk type.
const chunkInitAck = 2

// setPorts rewrites an SCTP packet's ports and its checksum (a zero
// checksum, RFC 9653, stays zero).
func setPorts(b []byte, src, dst uint16) {
	if binary.BigEndian.Uint16(b) == src && binary.BigEndian.Uint16(b[2:]) == dst {
		return
	}
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	if binary.LittleEndian.Uint32(b[8:]) == 0 {
		return
	}
	binary.LittleEndian.PutUint32(b[8:], 0)
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b, castagnoli))
}

// kernelConn is the net.Conn every pion association reads and writes
// through, mending two things the Linux kernel refuses:
//
//   - pion/sctp refuses an INIT that carries a parameter it does not know
//     and whose type says "stop processing" (the top two bits 00 or 01),
//     but the kernel's INIT always lists its Supported Address Types (RFC
//     9260 §3.3.2.1), and its IPv4/IPv6 addresses when it has several, all
//     of which a single-homed pion may ignore. Read removes them from an
//     INIT (droppedInitParams).
//   - pion v1.11.3 sends its own HEARTBEATs (an RTT probe when its probe
//     timer fires with nothing in flight) without the Heartbeat Info
//     parameter (liveness.go), which the kernel takes for a protocol
//     violation and answers with an ABORT. Mending them would not help:
//     pion cannot parse the HEARTBEAT-ACK that comes back ("unknown chunk
//     type"). So Write drops them; a pion peer drops them too, so nothing
//     is lost but a futile RTT probe.
//
// It also carries the association's path MTU probes (pmtu.go): it shows
// pr the header of pion's packets and keeps the answers from pion.
type kernelConn struct {
	net.Conn
	pr *prober
}

var droppedInitParams = map[uint16]bool{
	5:  true, // IPv4 Address
	6:  true, // IPv6 Address
	9:  true, // Cookie Preservative
	11: true, // Host Name Address (deprecated)
	12: true, // Supported Address Types
}

func (c kernelConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err == nil && c.pr.answered(p[:n]) {
			continue
		}
		if err == nil {
			c.pr.received(p[:n])
		}
		if err == nil && n > sctpCommonHeader && p[sctpCommonHeader] == chunkInit {
			n = stripInitParams(p[:n])
		}
		return n, err
	}
}

// Write drops a bare HEARTBEAT (a packet of just its 4-byte chunk header,
// as pion packs it) and sends anything else as is.
func (c kernelConn) Write(p []byte) (int, error) {
	if len(p) == sctpCommonHeader+4 && p[sctpCommonHeader] == chunkHeartbeat {
		return len(p), nil
	}
	c.pr.sent(p)
	return c.Conn.Write(p)
}

const (
	chunkInit       = 1
	chunkHeartbeat  = 4
	chunkCookieEcho = 10
	initFixedLen    = 4 + 16 // chunk header and INIT's fixed fields
	paramHeaderLen  = 4
)

// stripInitParams removes droppedInitParams from the INIT that starts p's
// first chunk, fixes the lengths and the checksum, and returns p's new
// length. A malformed INIT, or one with a wrong checksum, is left for pion
// to refuse.
func stripInitParams(p []byte) int {
	ch := p[sctpCommonHeader:]
	if len(ch) < initFixedLen || !checksumValid(p) {
		return len(p)
	}
	clen := int(binary.BigEndian.Uint16(ch[2:]))
	if clen < initFixedLen || clen > len(ch) {
		return len(p)
	}
	w, last := initFixedLen, initFixedLen // write offset, end of the last kept param unpadded
	dropped := false
	for r := initFixedLen; r+paramHeaderLen <= clen; {
		typ, l := binary.BigEndian.Uint16(ch[r:]), int(binary.BigEndian.Uint16(ch[r+2:]))
		if l < paramHeaderLen || r+l > clen {
			return len(p)
		}
		padded := min((l+3)&^3, len(ch)-r)
		if droppedInitParams[typ] {
			dropped = true
		} else {
			copy(ch[w:], ch[r:r+padded])
			w, last = w+padded, w+l
		}
		r += padded
	}
	if !dropped {
		return len(p)
	}
	rest := copy(ch[w:], ch[min((clen+3)&^3, len(ch)):]) // chunks after the INIT, if any
	binary.BigEndian.PutUint16(ch[2:], uint16(last))
	n := sctpCommonHeader + w + rest
	if binary.LittleEndian.Uint32(p[8:]) != 0 {
		binary.LittleEndian.PutUint32(p[8:], 0)
		binary.LittleEndian.PutUint32(p[8:], crc32.Checksum(p[:n], castagnoli))
	}
	return n
}

// Optional fast paths of a conn under pion: a patched pion (see the cpu
// work's third_party/pion-sctp) reads through ReadPacket and writes
// through WriteOwned when its net.Conn has them. portConn and kernelConn
// forward both, with the same mending, so that wrapping a conn never hides
// its fast path; over a conn without them they fall back to Read and
// Write.
// pion uses WriteOwned only on a conn that also has Flush (it ends each
// round of writes with it), so both wrappers forward Flush too; and
// SetBeforeWait, with which pion's read loop runs write rounds itself
// (dtls.go).
type (
	packetReader interface{ ReadPacket() ([]byte, error) }
	ownedWriter  interface {
		WriteOwned(p []byte, release func([]byte)) (int, error)
		Flush() error
	}
	beforeWaiter interface{ SetBeforeWait(f func()) bool }
)

// setBeforeWait passes f to c's SetBeforeWait, if it has one, and reports
// whether c takes it.
func setBeforeWait(c net.Conn, f func()) bool {
	if w, ok := c.(beforeWaiter); ok {
		return w.SetBeforeWait(f)
	}
	return false
}

// SetBeforeWait forwards to the wrapped conn.
func (c *portConn) SetBeforeWait(f func()) bool { return setBeforeWait(c.Conn, f) }

// SetBeforeWait forwards to the wrapped conn.
func (c kernelConn) SetBeforeWait(f func()) bool { return setBeforeWait(c.Conn, f) }

// flush sends what c holds from WriteOwned, if it holds anything.
func flush(c net.Conn) error {
	if w, ok := c.(ownedWriter); ok {
		return w.Flush()
	}
	return nil
}

// Flush forwards to the wrapped conn.
func (c *portConn) Flush() error { return flush(c.Conn) }

// Flush forwards to the wrapped conn.
func (c kernelConn) Flush() error { return flush(c.Conn) }

// readPacket reads the next packet from c into a buffer the caller owns.
func readPacket(c net.Conn) ([]byte, error) {
	if r, ok := c.(packetReader); ok {
		return r.ReadPacket()
	}
	b := make([]byte, maxDatagram+1)
	n, err := c.Read(b)
	return b[:n], err
}

// writeOwned writes p, which it owns, to c and releases it.
func writeOwned(c net.Conn, p []byte, release func([]byte)) (int, error) {
	if w, ok := c.(ownedWriter); ok {
		return w.WriteOwned(p, release)
	}
	n, err := c.Write(p)
	release(p)
	return n, err
}

// ReadPacket is Read for a caller that takes the buffer.
func (c *portConn) ReadPacket() ([]byte, error) {
	p, err := readPacket(c.Conn)
	if err == nil && len(p) > sctpCommonHeader && p[sctpCommonHeader] == chunkInitAck && checksumValid(p) {
		setPorts(p, pionPort, pionPort)
	}
	return p, err
}

// WriteOwned is Write for a caller that hands p over: the ports are
// rewritten in place, without a copy.
func (c *portConn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	if len(p) >= sctpCommonHeader {
		setPorts(p, c.src, c.dst)
	}
	return writeOwned(c.Conn, p, release)
}

// ReadPacket is Read for a caller that takes the buffer.
func (c kernelConn) ReadPacket() ([]byte, error) {
	for {
		p, err := readPacket(c.Conn)
		if err == nil && c.pr.answered(p) {
			continue
		}
		if err == nil {
			c.pr.received(p)
		}
		if err == nil && len(p) > sctpCommonHeader && p[sctpCommonHeader] == chunkInit {
			p = p[:stripInitParams(p)]
		}
		return p, err
	}
}

// WriteOwned is Write for a caller that hands p over.
func (c kernelConn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	if len(p) == sctpCommonHeader+4 && p[sctpCommonHeader] == chunkHeartbeat {
		release(p)
		return len(p), nil
	}
	c.pr.sent(p)
	return writeOwned(c.Conn, p, release)
}

package sctp

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport"
)

// The path MTU probe, packetization-layer path MTU discovery (RFC 8899) in
// its simplest form. Bigger packets cost much less CPU per byte (a 64 KiB
// packet on loopback takes a third less CPU per GB than 8 KiB ones), but a
// packet bigger than the path or the peer takes is lost without a word:
// IP fragments are dropped by some paths, and braid releases before this
// one read at most 8192 bytes per packet. So an association starts at a
// size every peer reads (Config.mtuFor) and, to a loopback peer, sends
// one HEARTBEAT padded to the route's MTU (64 KiB). The peer, pion or a
// kernel stack, echoes its Heartbeat Info in a HEARTBEAT-ACK of the same
// size; if that comes back the path carried the size both ways and the
// peer read it, and the association sends packets that big from then on.
// If it does not, after a few tries, it keeps what it has. Each side
// probes for its own sends.
//
// Only loopback peers are probed: a braid release before this one takes a
// packet over 8192 bytes for garbage and aborts the association, and while
// a cluster is upgraded host by host such a release may run on the other
// end of a jumbo-frame path; on one host, both ends run one install.
//
// Only pion peers are probed. The Linux kernel's stack (6.1, over UDP, on
// loopback in make vm-test) answers a 64 KiB HEARTBEAT but then drops DATA
// in packets that big, and the association dies. A peer is taken for pion
// when its INIT or INIT-ACK carries no parameter pion would not send (the
// kernel always lists ECN and PR-SCTP support, and in an INIT its address
// types).

// prober probes one association's path. Its methods are safe for
// concurrent use; a nil *prober does nothing.
type prober struct {
	w     net.Conn      // pion's packets are written to this conn
	route int           // routeMTU of the peer, 0 if unknown
	hdr   atomic.Uint64 // ports and verification tag of pion's packets, once known
	token [8]byte       // tells this side's probes from any other HEARTBEAT-ACK
	acks  chan int      // sizes of answered probes
	// foreign is set when the peer's INIT or INIT-ACK shows it is not pion.
	foreign atomic.Bool
}

// pionInitParams are the parameters pion puts in an INIT or INIT-ACK:
// State Cookie, Zero Checksum Acceptable and Supported Extensions.
var pionInitParams = map[uint16]bool{7: true, 0x8001: true, 0x8008: true}

// received looks at a packet from the peer before pion does: an INIT or
// INIT-ACK with a parameter pion does not send marks the peer foreign.
func (p *prober) received(b []byte) {
	if p == nil || len(b) < sctpCommonHeader+initFixedLen {
		return
	}
	if t := b[sctpCommonHeader]; t != chunkInit && t != chunkInitAck {
		return
	}
	ch := b[sctpCommonHeader:]
	clen := min(int(binary.BigEndian.Uint16(ch[2:])), len(ch))
	for r := initFixedLen; r+paramHeaderLen <= clen; {
		typ, l := binary.BigEndian.Uint16(ch[r:]), int(binary.BigEndian.Uint16(ch[r+2:]))
		if l < paramHeaderLen {
			return
		}
		if !pionInitParams[typ] {
			p.foreign.Store(true)
			return
		}
		r += (l + 3) &^ 3
	}
}

func newProber() *prober {
	p := &prober{acks: make(chan int, 4)}
	_, _ = rand.Read(p.token[:])
	return p
}

// probeMagic starts the Heartbeat Info of braid's probes.
const probeMagic = "braid-pmtu"

const (
	chunkHeartbeatAck = 5
	paramHeartbeat    = 1 // Heartbeat Info
	// probeInfoAt is where the Heartbeat Info starts in a probe packet
	// (after the common header, the chunk header and the parameter's).
	probeInfoAt = sctpCommonHeader + 4 + paramHeaderLen
	probeMin    = probeInfoAt + len(probeMagic) + 8 + 4
)

// sent notes the common header of a packet pion sends (its ports and the
// peer's verification tag); only the first one after the INIT is kept.
func (p *prober) sent(b []byte) {
	if p == nil || p.hdr.Load() != 0 || len(b) <= sctpCommonHeader || b[sctpCommonHeader] == chunkInit {
		return
	}
	p.hdr.Store(binary.BigEndian.Uint64(b))
}

// answered reports whether b is the HEARTBEAT-ACK of one of this side's
// probes, alone in its packet; if so it records its size.
func (p *prober) answered(b []byte) bool {
	if p == nil || len(b) < probeMin || b[sctpCommonHeader] != chunkHeartbeatAck {
		return false
	}
	info := b[probeInfoAt:]
	if int(binary.BigEndian.Uint16(b[sctpCommonHeader+2:]))+sctpCommonHeader != len(b) ||
		!bytes.HasPrefix(info, []byte(probeMagic)) ||
		!bytes.Equal(info[len(probeMagic):len(probeMagic)+8], p.token[:]) {
		return false
	}
	size := int(binary.BigEndian.Uint32(info[len(probeMagic)+8:]))
	select {
	case p.acks <- size:
	default:
	}
	return true
}

// packet builds a probe of size bytes (a multiple of 4), or nil before
// pion has sent anything to copy the header from.
func (p *prober) packet(size int) []byte {
	hdr := p.hdr.Load()
	if hdr == 0 || size < probeMin {
		return nil
	}
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, hdr)
	ch := b[sctpCommonHeader:]
	ch[0] = chunkHeartbeat
	binary.BigEndian.PutUint16(ch[2:], uint16(size-sctpCommonHeader))
	binary.BigEndian.PutUint16(ch[4:], paramHeartbeat)
	binary.BigEndian.PutUint16(ch[6:], uint16(size-sctpCommonHeader-4))
	info := b[probeInfoAt:]
	n := copy(info, probeMagic)
	n += copy(info[n:], p.token[:])
	binary.BigEndian.PutUint32(info[n:], uint32(size))
	binary.LittleEndian.PutUint32(b[8:], crc32.Checksum(b, castagnoli))
	return b
}

// probeTries and probeWait bound the probe of one size: a lost probe is
// sent again, and a size that is never answered costs probeTries ×
// probeWait before the next one is tried.
const (
	probeTries = 3
	probeWait  = time.Second // Config.probeWait
)

// probe raises the MTU of a's pion association to the route's MTU if that
// is bigger than the current one and a probe of it is answered. It returns
// when done or when a ends.
func (a *Association) probe(p *prober) {
	defer a.readers.Done()
	if p.foreign.Load() || !transport.IsLoopback(a.conn.RemoteAddr()) {
		return
	}
	size := p.route &^ 3
	if size <= int(a.pa.MTU()) {
		return
	}
	for range probeTries {
		b := p.packet(size)
		if b == nil {
			return
		}
		if _, err := p.w.Write(b); err != nil {
			return
		}
		if a.awaitProbe(p, size) {
			if err := a.pa.SetMTU(uint32(size)); err == nil {
				a.cfg.Logger.Debug("path MTU raised", "peer", a.conn.RemoteAddr().String(), "mtu", size)
			}
			return
		}
		select {
		case <-a.done:
			return
		default:
		}
	}
}

// awaitProbe waits up to Config.probeWait for the answer to a probe of size.
func (a *Association) awaitProbe(p *prober, size int) bool {
	t := time.NewTimer(a.cfg.probeWait)
	defer t.Stop()
	for {
		select {
		case got := <-p.acks:
			if got == size {
				return true
			}
		case <-t.C:
			return false
		case <-a.done:
			return false
		}
	}
}

// routeMTU is the biggest UDP payload the kernel's route to addr carries
// without IP fragmentation (at most maxDatagram), or 0 if unknown.
// Connecting a UDP socket sends nothing; it only looks the route up.
func routeMTU(addr net.Addr) int {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0
	}
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return 0
	}
	defer func() { _ = uc.Close() }()
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	mtu, hdr := 0, 20+8
	_ = rc.Control(func(fd uintptr) {
		if ua.IP.To4() != nil {
			mtu, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU)
		} else {
			mtu, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU)
			hdr = 40 + 8
		}
	})
	if err != nil || mtu <= hdr {
		return 0
	}
	return min(mtu-hdr, maxDatagram)
}

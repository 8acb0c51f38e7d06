package sctp

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/braidhq/braid/transport"
)

// Protocol constants shared by both ends (they are not negotiated).
const (
	// maxFragment is the largest fragment payload a receiver accepts.
	maxFragment = 64 << 10
	// initialCredit is the credit a sender starts with on every stream,
	// before the receiver's first grant.
	initialCredit = 256 << 10
	// maxDatagram is the largest SCTP packet read or sent: the largest
	// UDP payload over IPv4. (braid releases before the path MTU probe read
	// at most 8192; see pmtu.go.)
	maxDatagram = 65507
	// legacyDatagram is the largest packet every braid peer reads, and the
	// size an association starts with towards a loopback peer.
	legacyDatagram = 8192
)

// Config tunes the transport. The zero value means the documented defaults;
// New applies them.
type Config struct {
	// MTU is the largest SCTP packet sent, in bytes (one UDP datagram),
	// in [1200, 65507]; setting it turns the path MTU probe off. Default:
	// the association starts at 8192 to a loopback peer and at 1452 to any
	// other (a 1500-byte Ethernet MTU less IPv6 and UDP headers, or less
	// when the route's MTU is smaller), so that datagrams are not
	// IP-fragmented; then, to a loopback peer, it probes for 64 KiB with
	// one padded HEARTBEAT and moves up if that is answered (pmtu.go).
	// Bigger packets cost much less CPU per byte. On a jumbo-frame network
	// set it (to at most 8192 while older braid releases, which read no
	// more, are in the cluster).
	MTU int
	// ReceiveBuffer is pion's per-association receive window in bytes.
	// Default 8 MiB.
	ReceiveBuffer int
	// FragmentSize is the largest fragment payload this side sends, at most
	// 64 KiB (the default). Messages above it are cut into fragments.
	FragmentSize int
	// StreamWindow is the per-stream credit a receiver grants beyond what its
	// application has consumed. Default 4 MiB, at least 256 KiB.
	StreamWindow int
	// MaxReassembly bounds the bytes held in partly received messages across
	// the streams of one association; a peer that exceeds it is aborted.
	// Default 1 GiB.
	MaxReassembly int64
	// SocketBuffer is the UDP socket's send and receive buffer request.
	// Default 4 MiB (the kernel may cap it).
	SocketBuffer int
	// HandshakeTimeout bounds the SCTP and braid handshakes when the caller's
	// context has no earlier deadline. Default 10 s.
	HandshakeTimeout time.Duration
	// CloseTimeout bounds a graceful Close; after it the association is
	// aborted. Default 5 s.
	CloseTimeout time.Duration
	// MaxHalfOpen caps the associations a Listener holds mid-handshake,
	// an eighth of them per source address. Default 64. Only a peer that
	// returned the listener's stateless cookie gets one (cookie.go), so
	// forged INITs and ClientHellos hold none; a newcomer beyond either
	// bound evicts one (silent ones and those of the busiest source first,
	// mux.go) rather than being refused, and one that has not spoken braid's
	// handshake within five seconds is dropped, so that peers that associate
	// and stay silent cannot lock real peers out.
	MaxHalfOpen int
	// AcceptBacklog is how many handshaken associations wait for Accept.
	// Default 16.
	AcceptBacklog int
	// CC is the congestion control of associations with peers on other
	// hosts (cc.go): reno (Flows reno flows), cubic (RFC 9438), bbr
	// (BBRv1), bbr-cubic (bbr bounded by a CUBIC window where a queue
	// stands), or auto (the default, ""): DefaultCC, or reno if Flows is
	// set. A peer on this host always gets reno.
	CC string
	// Flows is how many reno flows each association's congestion control
	// stands for, in [1, 16] (flows.go), with CC reno: under random loss an
	// association with N carries about what N would. 0, the default, tunes
	// N per association from what its sender sees, from MinTunedFlows up;
	// associations with a peer on this host then keep one.
	Flows int
	// Unpaced sends new data as soon as the congestion window opens. By
	// default an association paces it (the fork's SetPacing): at most the
	// rate its controller gives (bbr: its model's; reno and cubic:
	// 1.25·cwnd/minRTT, twice that in slow start), in bursts of a
	// few milliseconds' worth, so that a burst of SACKs, which a queue on
	// the return path bunches up, does not release a burst of data that
	// overflows the bottleneck's queue. Associations with a peer on this
	// host are never paced.
	Unpaced bool
	// NoHyStart leaves slow start to run until a loss. By default the slow
	// start of reno and cubic watches the round trip time (HyStart++,
	// RFC 9406, the fork's SetHyStart): once a round's smallest RTT is above the
	// last round's by an eighth of it (4 to 16 ms), the bottleneck's queue
	// is filling, and the window grows a quarter as fast for up to five
	// rounds, then as in congestion avoidance. Associations with a peer
	// on this host never use it.
	NoHyStart bool
	// ZeroChecksum lets peers skip the CRC32c (RFC 9653) when both agree.
	// Associations with a loopback peer always offer it: loopback packets
	// are never corrupted (the kernel skips checksums there too), and the
	// CRC costs about a tenth of the CPU of a small unit's round trip.
	ZeroChecksum bool
	// TLS says when associations run over DTLS keyed to the cluster
	// secret (dtls.go): the zero value, between hosts; a listener takes
	// DTLS from anyone and plaintext SCTP only where the mode allows it.
	TLS transport.TLSMode
	// Logger receives the transport's log lines (group "sctp"); nil
	// discards them.
	Logger *slog.Logger

	probeWait time.Duration // how long a path MTU probe waits; tests shorten it
	// pionRecords leaves every DTLS record to pion/dtls, as braid did
	// before record.go; tests of a cluster of both set it on one end.
	pionRecords bool
}

// withDefaults returns c with zero fields set to their defaults, or an error
// for a value out of range.
func (c Config) withDefaults() (Config, error) {
	setDefault(&c.ReceiveBuffer, 8<<20)
	setDefault(&c.FragmentSize, maxFragment)
	setDefault(&c.StreamWindow, 4<<20)
	setDefault(&c.MaxReassembly, 1<<30)
	setDefault(&c.SocketBuffer, 4<<20)
	setDefault(&c.HandshakeTimeout, 10*time.Second)
	setDefault(&c.CloseTimeout, 5*time.Second)
	setDefault(&c.MaxHalfOpen, 64)
	setDefault(&c.AcceptBacklog, 16)
	setDefault(&c.probeWait, probeWait)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Logger = c.Logger.WithGroup("sctp")
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.MTU != 0 && (c.MTU < minMTU || c.MTU > maxDatagram):
		return fmt.Errorf("sctp: MTU %d not in [%d, %d]", c.MTU, minMTU, maxDatagram)
	case c.FragmentSize < 1024 || c.FragmentSize > maxFragment:
		return fmt.Errorf("sctp: FragmentSize %d not in [1024, %d]", c.FragmentSize, maxFragment)
	case c.StreamWindow < initialCredit:
		return fmt.Errorf("sctp: StreamWindow %d below %d", c.StreamWindow, initialCredit)
	case c.Flows < 0 || c.Flows > MaxFlows:
		return fmt.Errorf("sctp: Flows %d not in [1, %d] (0: tuned)", c.Flows, MaxFlows)
	case c.ReceiveBuffer < 4*maxFragment:
		return fmt.Errorf("sctp: ReceiveBuffer %d below %d", c.ReceiveBuffer, 4*maxFragment)
	}
	return c.validateCC()
}

// mtuFor is the MTU an association towards addr starts with: c.MTU if
// set, else a size every braid peer reads that the route carries unsplit
// (route is routeMTU(addr), 0 if unknown).
func (c Config) mtuFor(addr net.Addr, route int) int {
	if c.MTU != 0 {
		return c.MTU
	}
	start := ethernetMTU
	if transport.IsLoopback(addr) {
		start = legacyDatagram
	}
	if route > 0 {
		start = max(min(start, route), minMTU)
	}
	return start
}

// minMTU is the smallest MTU braid uses (WebRTC's; IPv6 guarantees 1280).
const minMTU = 1200

// ethernetMTU is 1500 less the IPv6 and UDP headers.
const ethernetMTU = 1500 - 40 - 8

func setDefault[T int | int64 | time.Duration](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

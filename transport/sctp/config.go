package sctp

import (
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Protocol constants shared by both ends (they are not negotiated).
const (
	// maxFragment is the largest fragment payload a receiver accepts.
	maxFragment = 64 << 10
	// initialCredit is the credit a sender starts with on every stream,
	// before the receiver's first grant.
	initialCredit = 256 << 10
	// maxDatagram is the largest SCTP packet pion reads (its receive MTU).
	maxDatagram = 8192
)

// Config tunes the transport. The zero value means the documented defaults;
// New applies them.
type Config struct {
	// MTU is the largest SCTP packet sent, in bytes (one UDP datagram),
	// at most 8192 (pion/sctp reads at most 8192 bytes per packet). Default:
	// 8192 to a loopback peer, where bigger packets are much faster than
	// WebRTC's ~1200, and 1452 to any other peer (a 1500-byte Ethernet MTU
	// less IPv6 and UDP headers), so that datagrams are not IP-fragmented.
	// Set it to 8192 on a jumbo-frame network.
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
	// MaxHalfOpen caps the associations a Listener holds mid-handshake.
	// Default 64; INITs beyond it are dropped.
	MaxHalfOpen int
	// AcceptBacklog is how many handshaken associations wait for Accept.
	// Default 16.
	AcceptBacklog int
	// ZeroChecksum lets peers skip the CRC32c (RFC 9653) when both agree.
	ZeroChecksum bool
	// Logger receives the transport's log lines (group "sctp"); nil
	// discards them.
	Logger *slog.Logger
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Logger = c.Logger.WithGroup("sctp")
	return c, c.validate()
}

func (c Config) validate() error {
	switch {
	case c.MTU != 0 && (c.MTU < 1200 || c.MTU > maxDatagram):
		return fmt.Errorf("sctp: MTU %d not in [1200, %d]", c.MTU, maxDatagram)
	case c.FragmentSize < 1024 || c.FragmentSize > maxFragment:
		return fmt.Errorf("sctp: FragmentSize %d not in [1024, %d]", c.FragmentSize, maxFragment)
	case c.StreamWindow < initialCredit:
		return fmt.Errorf("sctp: StreamWindow %d below %d", c.StreamWindow, initialCredit)
	case c.ReceiveBuffer < 4*maxFragment:
		return fmt.Errorf("sctp: ReceiveBuffer %d below %d", c.ReceiveBuffer, 4*maxFragment)
	}
	return nil
}

// mtuFor is the MTU to use towards addr.
func (c Config) mtuFor(addr net.Addr) int {
	if c.MTU != 0 {
		return c.MTU
	}
	if ua, ok := addr.(*net.UDPAddr); ok && ua.IP.IsLoopback() {
		return maxDatagram
	}
	return ethernetMTU
}

// ethernetMTU is 1500 less the IPv6 and UDP headers.
const ethernetMTU = 1500 - 40 - 8

func setDefault[T int | int64 | time.Duration](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

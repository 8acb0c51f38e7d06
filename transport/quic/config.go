package quic

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"time"

	"github.com/braidhq/braid/transport"
	quicgo "github.com/quic-go/quic-go"
)

// alpn is the TLS application protocol braid speaks over QUIC.
const alpn = "braid/1"

// Config tunes the transport. Zero values mean the documented defaults. How
// long a silent peer is kept is not set here but per association, by
// transport.DialConfig.Liveness and ListenConfig.Liveness, which set QUIC's
// keep-alive period and idle timeout (see the package comment).
type Config struct {
	// Certificate is presented by listeners. Default: the certificate
	// the cluster secret (ListenConfig.Secret) gives this process
	// (transport/internal/clustertls). A listener requires the dialer's
	// cluster certificate either way.
	Certificate *tls.Certificate
	// RootCAs, if set, makes dialers verify the listener's certificate
	// against these authorities, under ServerName (default the host in
	// the dial address), instead of against the cluster's: set it with a
	// Certificate that they issued on the listeners. The dialer presents
	// its cluster certificate either way.
	RootCAs    *x509.CertPool
	ServerName string
	// StreamWindow is the largest QUIC receive window of one stream.
	// Default 16 MiB.
	StreamWindow uint64
	// ConnWindow is the largest receive window of a connection. Default
	// 512 MiB, so that unread streams cannot starve the others.
	ConnWindow uint64
	// QueueBytes bounds the received messages waiting for Recv on one
	// stream (one message is always admitted). Default 4 MiB.
	QueueBytes int
	// HandshakeTimeout bounds the QUIC and braid handshakes. Default 10 s.
	HandshakeTimeout time.Duration
	// CloseTimeout bounds a graceful Close. Default 5 s.
	CloseTimeout time.Duration
	// Logger receives log lines (group "quic"); nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	setDefault(&c.StreamWindow, 16<<20)
	setDefault(&c.ConnWindow, 512<<20)
	setDefault(&c.QueueBytes, 4<<20)
	setDefault(&c.HandshakeTimeout, 10*time.Second)
	setDefault(&c.CloseTimeout, 5*time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Logger = c.Logger.WithGroup("quic")
	return c
}

// preAuthWindow is the initial receive window of each stream: all a peer
// that has not authenticated can make a listener buffer on the control
// stream, the only one it may open (see Listener). quic-go's auto-tuning
// grows the windows of an authenticated connection's streams, as their data
// is read, up to StreamWindow. The connection window starts at 32 MiB, well
// above the 1.5 stream windows quic-go keeps it at, so that unread streams
// cannot starve the others; the listener lets it grow only once the peer
// has authenticated.
const preAuthWindow = 512 << 10

// quicConfig is the quic-go configuration for one side whose configured
// liveness is liveness: windows that start small and grow for bulk data, room for MaxStreams
// streams plus the control stream, and keep-alive PINGs after a third of
// the liveness without a packet from the peer. The idle timeout is the rest
// of the liveness, because quic-go starts it at the first ack-eliciting
// packet sent after the last one received, which for an idle connection is
// that PING: so a peer that falls silent is given up the liveness after its
// last packet (see the package comment).
func (c Config) quicConfig(liveness time.Duration) *quicgo.Config {
	l := transport.NormLiveness(liveness)
	keepAlive := l / 3
	return &quicgo.Config{
		HandshakeIdleTimeout:           c.HandshakeTimeout,
		MaxIdleTimeout:                 l - keepAlive,
		KeepAlivePeriod:                keepAlive,
		InitialStreamReceiveWindow:     min(c.StreamWindow, preAuthWindow),
		MaxStreamReceiveWindow:         c.StreamWindow,
		InitialConnectionReceiveWindow: min(c.ConnWindow, 32<<20),
		MaxConnectionReceiveWindow:     c.ConnWindow,
		MaxIncomingStreams:             transport.MaxStreams + 1,
		MaxIncomingUniStreams:          -1,
	}
}

func setDefault[T int | uint64 | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

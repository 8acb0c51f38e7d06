// Package tcp is braid's baseline transport: one TCP connection per
// association, its streams multiplexed by framing.
//
// Messages are cut into frames of at most 64 KiB so that a large message on
// one stream does not hold the connection against the others' frames. One
// receive goroutine per association demultiplexes frames into bounded
// per-stream queues; when a stream's queue is full that goroutine blocks, and
// with it every other stream: this transport shows head-of-line blocking and
// says so in its Capabilities.
//
// Liveness: TCP alone does not notice a peer that is frozen (its kernel keeps
// acknowledging) or cut off without a reset for minutes or hours, so each
// side writes a ping frame when it has written nothing for half the
// negotiated liveness, and ends the association with a
// transport.PeerLostError once its reader has waited the whole liveness with
// nothing arriving. A wait for the local application to take messages off a
// full stream queue does not count (see transport/internal/mux). A
// connection that has carried no message for the liveness bound, on a side
// with no work under way (transport.Busy), may go idle: its pings say so,
// and it is pinged and watched with the idle bound (Config.IdleFactor)
// until a message goes either way.
package tcp

import (
	"context"
	"fmt"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
	"github.com/braidhq/braid/transport/internal/mux"
	"github.com/braidhq/braid/transport/internal/preauth"
	"github.com/braidhq/braid/transport/internal/tcpconn"
)

// Config configures the transport. The zero value is ready to use.
type Config struct {
	// HandshakeTimeout bounds connecting plus the braid handshake, so that
	// a silent peer cannot hold a goroutine. Zero means 10 s.
	// Listeners bound unauthenticated connections more tightly: one that
	// sends nothing for a second, or is the oldest of too many (256 in
	// all, 32 per source address), is dropped (see
	// transport/internal/preauth).
	HandshakeTimeout time.Duration
	// CloseTimeout bounds how long Close waits for the peer to acknowledge.
	// Zero means 5 s.
	CloseTimeout time.Duration
	// QueueBytes bounds each stream's receive queue. Zero means 4 MiB.
	QueueBytes int
	// MPTCP asks for Multipath TCP (Linux) on every connection; one whose
	// peer does not take it runs plain TCP.
	MPTCP bool
	// CC is the TCP congestion control of every connection (Linux,
	// TCP_CONGESTION), e.g. "cubic" or "bbr": any the kernel has, for
	// root; others may pick those net.ipv4.tcp_allowed_congestion_control
	// lists. Empty: the host's default.
	CC string
	// TLS says when connections use TLS 1.3 keyed to the cluster secret
	// (transport/internal/clustertls): the zero value, transport.TLSAuto,
	// between hosts, not on loopback.
	TLS transport.TLSMode
	// IdleFactor is this side's offer for the idle bound, in liveness
	// bounds (transport.DefaultIdleFactor, transport/internal/mux's
	// liveness.go): a quiet association's peer may then stay silent that
	// many liveness bounds. Zero means transport.DefaultIdleFactor; a
	// negative value offers none, and the association keeps the liveness
	// bound while quiet.
	IdleFactor int
}

func (c Config) withDefaults() Config {
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = 5 * time.Second
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 4 << 20
	}
	return c
}

// Transport is the "tcp" transport.
type Transport struct {
	cfg Config
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Describer = (*Transport)(nil)
)

// New returns a tcp Transport.
func New(cfg Config) *Transport {
	return &Transport{cfg: cfg.withDefaults()}
}

// Name returns "tcp".
func (t *Transport) Name() string { return "tcp" }

// Capabilities reports that streams share one connection and so block
// each other.
func (t *Transport) Capabilities() transport.Capabilities {
	return transport.Capabilities{IndependentStreams: false}
}

// Dial connects to addr and runs the handshake as the dialer.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	cfg.IdleFactor = mux.IdleOffer(t.cfg.IdleFactor)
	ctx, cancel := context.WithTimeout(ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	c, err := tcpconn.Dial(ctx, addr, tcpconn.Options{Secret: cfg.Secret, Mode: t.cfg.TLS, MPTCP: t.cfg.MPTCP, CC: t.cfg.CC})
	if err != nil {
		return nil, fmt.Errorf("tcp: dial %s: %w", addr, err)
	}
	stop := tcpconn.InterruptOn(ctx, c)
	res, err := transport.DialHandshake(ctx, frame.HandshakeConn{C: c}, cfg)
	if err = tcpconn.Settle(ctx, c, stop, err); err != nil {
		return nil, fmt.Errorf("tcp: dial %s: %w", addr, err)
	}
	return mux.New([]mux.Conn{c}, t.muxConfig(res, nil)), nil
}

func (t *Transport) muxConfig(res transport.HandshakeResult, release func()) mux.Config {
	return mux.Config{
		Streams:      res.Streams,
		Peer:         res.Peer,
		Release:      release,
		QueueBytes:   t.cfg.QueueBytes,
		CloseTimeout: t.cfg.CloseTimeout,
		Liveness:     res.Liveness,
		WatchEach:    res.PeerPingsEach,
		IdleLiveness: res.IdleLiveness,
	}
}

// Listen binds addr and accepts tcp associations.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	cfg.IdleFactor = mux.IdleOffer(t.cfg.IdleFactor)
	setup := func(ctx context.Context, c tcpconn.Conn, slot *preauth.Slot) (transport.Association, error) {
		stop := tcpconn.InterruptOn(ctx, c)
		res, release, err := transport.ListenHandshake(ctx, slot.Conn(frame.HandshakeConn{C: c}), slot.Config(cfg, nil))
		if err = tcpconn.Settle(ctx, c, stop, err); err != nil {
			release()
			return nil, err
		}
		return mux.New([]mux.Conn{c}, t.muxConfig(res, release)), nil
	}
	l, err := tcpconn.Listen("tcp", addr, t.cfg.HandshakeTimeout, cfg.Logf, cfg.Refused, tcpconn.Options{Secret: cfg.Secret, Mode: t.cfg.TLS, MPTCP: t.cfg.MPTCP, CC: t.cfg.CC}, setup)
	if err != nil {
		return nil, fmt.Errorf("tcp: listen %s: %w", addr, err)
	}
	return l, nil
}

// Package tcpn is braid's strong baseline transport: one TCP connection per
// stream.
//
// The first connection carries the braid handshake. The listener then sends
// the dialer a random association token, and the dialer opens the other N-1
// connections, each introducing itself with {token, stream index,
// HMAC(secret, token || index)}. The listener matches them to the pending
// association before a deadline and drops (and logs) anything that does not
// fit. Every stream has its own connection and receive goroutine, so a stream
// whose reader stops cannot stall the others.
//
// Liveness is watched on each of the association's connections: when a side
// has written nothing on a connection for half the negotiated liveness
// it writes a ping frame on it if its writer is idle (never waiting for a
// busy one); and once a connection's reader has waited the whole liveness
// with nothing arriving it ends the association with a
// transport.PeerLostError, so that one connection cut off alone is noticed
// too. A reader waiting for the local application to drain a full stream
// queue is not waiting on the peer, and that wait does not count (see
// transport/internal/mux). A connection that has carried no message for the
// liveness bound, on a side with no work under way (transport.Busy), may go
// idle: its pings say so, and it is pinged and watched with the idle bound
// (Config.IdleFactor) until a message goes either way.
package tcpn

import (
	"context"
	"fmt"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/connset"
	"github.com/braidhq/braid/transport/internal/frame"
	"github.com/braidhq/braid/transport/internal/mux"
	"github.com/braidhq/braid/transport/internal/tcpconn"
)

// Config configures the transport. The zero value is ready to use.
type Config struct {
	// HandshakeTimeout bounds connecting, the handshake and the joining of
	// all the association's connections. Zero means 10 s.
	// Listeners bound unauthenticated connections more tightly: one that
	// sends nothing for a second, or is the oldest of too many (256 in
	// all, 32 per source address), is dropped (see
	// transport/internal/preauth).
	HandshakeTimeout time.Duration
	// CloseTimeout bounds how long Close waits for the peer. Zero means 5 s.
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

// joinLabel names tcpn's joins (transport/internal/connset).
const joinLabel = "braid tcpn join"

// Transport is the "tcpn" transport.
type Transport struct {
	cfg Config
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Describer = (*Transport)(nil)
)

// New returns a tcpn Transport.
func New(cfg Config) *Transport {
	return &Transport{cfg: cfg.withDefaults()}
}

// Name returns "tcpn".
func (t *Transport) Name() string { return "tcpn" }

// Capabilities reports independent streams: one connection each.
func (t *Transport) Capabilities() transport.Capabilities {
	return transport.Capabilities{IndependentStreams: true}
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

// perStream is tcpn's connset.CountFunc: one connection per stream.
func perStream(_ frame.HandshakeConn, res transport.HandshakeResult) (int, error) {
	return res.Streams, nil
}

// Dial connects to addr, runs the handshake on the first connection and
// opens one more connection per extra stream.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	cfg.IdleFactor = mux.IdleOffer(t.cfg.IdleFactor)
	ctx, cancel := context.WithTimeout(ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	sec := tcpconn.Options{Secret: cfg.Secret, Mode: t.cfg.TLS, MPTCP: t.cfg.MPTCP, CC: t.cfg.CC}
	conns, res, err := connset.Dial(ctx, addr, sec, joinLabel, cfg, perStream, func(int) (string, error) { return addr, nil }, nil)
	if err != nil {
		return nil, fmt.Errorf("tcpn: dial %s: %w", addr, err)
	}
	return mux.New(conns, t.muxConfig(res, nil)), nil
}

// Listen binds addr and accepts tcpn associations.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	cfg.IdleFactor = mux.IdleOffer(t.cfg.IdleFactor)
	sec := tcpconn.Options{Secret: cfg.Secret, Mode: t.cfg.TLS, MPTCP: t.cfg.MPTCP, CC: t.cfg.CC}
	l, err := connset.Listen("tcpn", addr, t.cfg.HandshakeTimeout, sec, joinLabel, cfg, perStream, t.muxConfig)
	if err != nil {
		return nil, fmt.Errorf("tcpn: listen %s: %w", addr, err)
	}
	return l, nil
}

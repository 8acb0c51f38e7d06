// Package ptcp is braid's striping transport, after psockets (seed 002,
// Ubik and Čížek; docs/seeds.md): every association has N TCP connections,
// and each message is cut into blocks spread over all of them, so that a
// single stream gets N congestion windows and, through connections routed
// over different paths, the capacity of several paths.
//
// The first connection carries the braid handshake. Then the listener
// offers its recommended and maximum stripe counts, the dialer picks N by
// psock's rule, min(max(recA, recB), maxA, maxB), and the listener sends an
// association token; the dialer opens the other N-1 connections, each
// joining with an HMAC of the token under the cluster secret
// (transport/internal/connset). With routes (the listener's other hosts,
// from DialConfig.Routes or Config.Routes) the connections go in turn to
// the dialed host and to each route, on the dialed port, so that stripes
// can take different paths to a listener bound to several addresses.
//
// Each side sends on RecStripes of the N connections. With RecStripes
// auto (the default) a side recommends MaxStripes, so that both ends open
// 16 when both are auto, and sends on as many as the network shows it
// needs: from AutoStartStripes, each epoch (four round trips, at least
// 100 ms) it reads its connections' TCP_INFO and adds connections while
// their congestion windows hold them back and no queue stands at the
// bottleneck, and drops one when one does, but never below
// AutoStartStripes (transport/internal/stripes, the rule sctp's flows
// follow; transport/internal/mux, stripetune.go). With a floor of one,
// the queue that a busy host's own delay shows on a short path took it
// to one or two connections: at 1 ms and 1% loss the floor of four ran
// jobs 1.12-1.19x as fast as the floor of one
// (docs/experiments/net-stripes). An unused connection carries nothing but the odd ping. Where
// it cannot tune, auto recommends and keeps AutoStartStripes: with a peer
// at a loopback address, on systems other than Linux, and over MPTCP. The
// other N-1 connections are opened four at a time.
//
// A driver spreads the blocks (transport/internal/mux, stripe.go): "rr"
// deals them to the connections in turn, so the slowest sets the pace;
// "pollall" gives each block to whichever connection can take it now, so a
// faster path carries more. The receiver puts each stream's blocks back in
// order. Streams share the connections, so a stream whose reader stops
// stalls the others once buffers fill: ptcp's streams are not independent,
// which Capabilities says (use tcpn or sctp for that).
//
// Liveness, TLS (keyed to the cluster secret, between hosts by default) and
// the close work as for tcpn. Each connection is watched on its own, idle
// ones included: a stripe whose path fails silently would otherwise hold
// its streams' blocks for ever while the others kept the association
// looking alive, so the association ends within the liveness bound.
package ptcp

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/connset"
	"github.com/braidhq/braid/transport/internal/frame"
	"github.com/braidhq/braid/transport/internal/mux"
	"github.com/braidhq/braid/transport/internal/stripes"
	"github.com/braidhq/braid/transport/internal/tcpconn"
)

// MaxStripes bounds the connections of one association.
const MaxStripes = 16

// StripesAuto, as Config.RecStripes, tunes the stripes: this side
// recommends MaxStripes connections and sends on as many of them as the
// network shows it needs, starting at AutoStartStripes and never below.
const (
	StripesAuto      = 0
	AutoStartStripes = 4
)

// Drivers, by the names the command line uses.
const (
	DriverRR      = "rr"
	DriverPollAll = "pollall"
)

// Config configures the transport. The zero value is ready to use.
type Config struct {
	// RecStripes and MaxStripes are this side's recommended and maximum
	// connection counts per association, 1 to MaxStripes; the two sides'
	// offers give N by psock's rule. This side sends its blocks on
	// RecStripes of the N connections (all N if fewer), the peer on its
	// own count. RecStripes zero (StripesAuto) means auto: recommend
	// MaxStripes and send on as many as measurement says, from
	// AutoStartStripes (see the package doc). MaxStripes zero means
	// MaxStripes.
	RecStripes, MaxStripes int
	// Driver spreads blocks over the connections: DriverRR or
	// DriverPollAll (the default). Each side drives what it sends.
	Driver string
	// BlockSize is the size blocks are cut to; zero (or over 64 KiB)
	// means 64 KiB.
	BlockSize int
	// Routes, if set, are other hosts (IP addresses or names) at which
	// every listener this side dials takes connections on the dialed
	// port, one per further path; a dial's DialConfig.Routes, if set,
	// takes their place. The association's connections go in turn to the
	// dialed host and to each route: connection i to hosts[i mod
	// len(hosts)], hosts being the dialed host, then the routes.
	Routes []string
	// HandshakeTimeout bounds connecting, the handshake and the joining of
	// all the connections. Zero means 10 s.
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
	// TLS says when connections use TLS 1.3 keyed to the cluster secret:
	// the zero value, transport.TLSAuto, between hosts, not on loopback.
	TLS transport.TLSMode
	// IdleFactor is this side's offer for the idle bound, in liveness
	// bounds (transport.DefaultIdleFactor, transport/internal/mux's
	// liveness.go): a quiet association's peer may then stay silent that
	// many liveness bounds. Zero means transport.DefaultIdleFactor; a
	// negative value offers none, and the association keeps the liveness
	// bound while quiet.
	IdleFactor int

	auto bool // RecStripes was StripesAuto
}

func (c Config) withDefaults() (Config, error) {
	for _, n := range []struct {
		name string
		v    int
	}{{"stripes", c.RecStripes}, {"maximum stripes", c.MaxStripes}} {
		if n.v < 0 || n.v > MaxStripes {
			return c, fmt.Errorf("ptcp: %d %s: want 1 to %d (0 for the default)", n.v, n.name, MaxStripes)
		}
	}
	if c.MaxStripes == 0 {
		c.MaxStripes = MaxStripes
	}
	if c.RecStripes == StripesAuto {
		c.auto = true
		c.RecStripes = c.MaxStripes
	}
	switch c.Driver {
	case "":
		c.Driver = DriverPollAll
	case DriverRR, DriverPollAll:
	default:
		return c, fmt.Errorf("ptcp: driver %q: want %s or %s", c.Driver, DriverRR, DriverPollAll)
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = 5 * time.Second
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 4 << 20
	}
	return c, nil
}

// joinLabel names ptcp's joins (transport/internal/connset).
const joinLabel = "braid ptcp join"

// Transport is the "ptcp" transport.
type Transport struct {
	cfg    Config
	routes connset.RouteMemory // routes its dials could not reach lately
}

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Describer = (*Transport)(nil)
)

// New returns a ptcp Transport, or an error for a bad Config.
func New(cfg Config) (*Transport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Transport{cfg: cfg}, nil
}

// Name returns "ptcp".
func (t *Transport) Name() string { return "ptcp" }

// Capabilities reports dependent streams: they share the connections.
func (t *Transport) Capabilities() transport.Capabilities {
	return transport.Capabilities{IndependentStreams: false}
}

func (t *Transport) muxConfig(res transport.HandshakeResult, release func()) mux.Config {
	driver := mux.PollAll
	if t.cfg.Driver == DriverRR {
		driver = mux.RoundRobin
	}
	send := t.cfg.RecStripes
	if t.cfg.auto {
		send = AutoStartStripes
	}
	return mux.Config{
		Streams:      res.Streams,
		Striped:      true,
		Driver:       driver,
		BlockSize:    t.cfg.BlockSize,
		SendStripes:  send,
		TuneStripes:  t.cfg.auto,
		Probe:        t.probe,
		Peer:         res.Peer,
		Release:      release,
		QueueBytes:   t.cfg.QueueBytes,
		CloseTimeout: t.cfg.CloseTimeout,
		Liveness:     res.Liveness,
		WatchEach:    res.PeerPingsEach,
		IdleLiveness: res.IdleLiveness,
	}
}

// probe reads a connection's counters for the stripe tuner, but not where
// auto does not tune (tunes), so that the count stays.
func (t *Transport) probe(c net.Conn) (stripes.LinkSample, bool) {
	if !t.tunes(c.RemoteAddr()) {
		return stripes.LinkSample{}, false
	}
	return tcpconn.Sample(c)
}

// The stripe-count messages on the first connection, after the handshake
// and before connset's token, length-prefixed like handshake messages:
//
//	listener -> dialer  offer  {magic "BRPO", rec u16, max u16}
//	dialer -> listener  choice {magic "BRPN", n u16}
const (
	offerMagic  = "BRPO"
	choiceMagic = "BRPN"
)

// rec is this side's recommended count for an association with peer: auto
// recommends MaxStripes, but AutoStartStripes where it will not tune (see
// tunes).
func (t *Transport) rec(peer net.Addr) int {
	if t.cfg.auto && !t.tunes(peer) {
		return min(AutoStartStripes, t.cfg.MaxStripes)
	}
	return t.cfg.RecStripes
}

// tunes says whether auto tunes its count with peer: not on loopback,
// where more connections cannot help; not where TCP_INFO cannot be read
// (tcpconn.CanSample); and not over MPTCP, whose connections each have a
// subflow per path, which one connection's counters do not describe.
func (t *Transport) tunes(peer net.Addr) bool {
	return !transport.IsLoopback(peer) && tcpconn.CanSample && !t.cfg.MPTCP
}

func (t *Transport) appendOffer(b []byte, peer net.Addr) []byte {
	b = append(b, offerMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(t.rec(peer)))
	return binary.BigEndian.AppendUint16(b, uint16(t.cfg.MaxStripes))
}

// choose reads the listener's offer and picks N.
func (t *Transport) choose(hc frame.HandshakeConn) (int, error) {
	p, err := hc.ReadMsg()
	if err != nil {
		return 0, fmt.Errorf("read stripe offer: %w", err)
	}
	if len(p) != len(offerMagic)+4 || string(p[:len(offerMagic)]) != offerMagic {
		return 0, fmt.Errorf("%w: bad stripe offer (is the peer ptcp?)", transport.ErrProtocol)
	}
	rec, maxN := int(binary.BigEndian.Uint16(p[4:])), int(binary.BigEndian.Uint16(p[6:]))
	if rec < 1 || maxN < 1 {
		return 0, fmt.Errorf("%w: stripe offer of %d recommended, %d at most", transport.ErrProtocol, rec, maxN)
	}
	return transport.NegotiateStreams(t.rec(hc.C.RemoteAddr()), t.cfg.MaxStripes, rec, maxN), nil
}

func appendChoice(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint16(append(b, choiceMagic...), uint16(n))
}

// readChoice reads the dialer's N, which must be within this side's offer.
func (t *Transport) readChoice(hc frame.HandshakeConn) (int, error) {
	p, err := hc.ReadMsg()
	if err != nil {
		return 0, fmt.Errorf("read stripe count: %w", err)
	}
	if len(p) != len(choiceMagic)+2 || string(p[:len(choiceMagic)]) != choiceMagic {
		return 0, fmt.Errorf("%w: bad stripe count message", transport.ErrProtocol)
	}
	n := int(binary.BigEndian.Uint16(p[len(choiceMagic):]))
	if n < 1 || n > t.cfg.MaxStripes {
		return 0, fmt.Errorf("%w: %d stripes asked, this side takes 1 to %d", transport.ErrProtocol, n, t.cfg.MaxStripes)
	}
	return n, nil
}

// route is where connection i of an association dialed at addr goes:
// routes (the dial's, else the transport's) are the listener's other hosts.
func (t *Transport) route(addr string, routes []string, i int) (string, error) {
	if len(routes) == 0 {
		routes = t.cfg.Routes
	}
	if i%(len(routes)+1) == 0 {
		return addr, nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(routes[i%(len(routes)+1)-1], port), nil
}

// Dial connects to addr, runs the handshake on the first connection, agrees
// on N with the listener and opens the other N-1 connections.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	cfg.IdleFactor = mux.IdleOffer(t.cfg.IdleFactor)
	ctx, cancel := context.WithTimeout(ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	sec := tcpconn.Options{Secret: cfg.Secret, Mode: t.cfg.TLS, MPTCP: t.cfg.MPTCP, CC: t.cfg.CC}
	count := func(hc frame.HandshakeConn, _ transport.HandshakeResult) (int, error) {
		n, err := t.choose(hc)
		if err == nil {
			err = hc.WriteMsg(appendChoice(nil, n))
		}
		return n, err
	}
	route := func(i int) (string, error) { return t.route(addr, cfg.Routes, i) }
	conns, res, err := connset.Dial(ctx, addr, sec, joinLabel, cfg, count, route, &t.routes)
	if err != nil {
		return nil, fmt.Errorf("ptcp: dial %s: %w", addr, err)
	}
	return mux.New(conns, t.muxConfig(res, nil)), nil
}

// Listen binds addr and accepts ptcp associations.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	cfg.IdleFactor = mux.IdleOffer(t.cfg.IdleFactor)
	count := func(hc frame.HandshakeConn, _ transport.HandshakeResult) (int, error) {
		if err := hc.WriteMsg(t.appendOffer(nil, hc.C.RemoteAddr())); err != nil {
			return 0, err
		}
		return t.readChoice(hc)
	}
	sec := tcpconn.Options{Secret: cfg.Secret, Mode: t.cfg.TLS, MPTCP: t.cfg.MPTCP, CC: t.cfg.CC}
	l, err := connset.Listen("ptcp", addr, t.cfg.HandshakeTimeout, sec, joinLabel, cfg, count, t.muxConfig)
	if err != nil {
		return nil, fmt.Errorf("ptcp: listen %s: %w", addr, err)
	}
	return l, nil
}

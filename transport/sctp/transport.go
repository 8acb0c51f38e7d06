package sctp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/pion/sctp"
)

var _ transport.Transport = (*Transport)(nil)

// Transport is the userspace SCTP-over-UDP transport.
type Transport struct {
	cfg Config
	err error // from Config validation, returned by Dial and Listen
}

// New returns a Transport; zero Config fields take their defaults. An
// invalid Config makes Dial and Listen fail.
func New(cfg Config) *Transport {
	c, err := cfg.withDefaults()
	return &Transport{cfg: c, err: err}
}

// Name implements transport.Transport.
func (*Transport) Name() string { return "sctp" }

// path is what an association knows of its path when it starts.
type path struct {
	route int // routeMTU of the peer, 0 if unknown or the MTU is fixed
	mtu   int // the size of the datagrams it starts with
}

// pathTo looks up the path to addr (once per association: it opens a
// socket).
func (t *Transport) pathTo(addr net.Addr) path {
	route := 0
	if t.cfg.MTU == 0 {
		route = routeMTU(addr)
	}
	return path{route: route, mtu: t.cfg.mtuFor(addr, route)}
}

// options are the pion settings for one association.
// pr, unless nil, is given pion's packets and probes the path's MTU
// through conn. sealed says conn is DTLS: its packets are smaller by a
// record's overhead, and need no checksum (RFC 9653), since the record's
// authentication tag covers them.
func (t *Transport) options(conn net.Conn, hook *garbageHook, pr *prober, p path, sealed bool) []sctp.AssociationOption {
	logs := pionLogs{log: func(m string) { t.cfg.Logger.Debug(m) }, hook: hook}
	if pr != nil {
		pr.w, pr.route = conn, p.route
	}
	mtu := p.mtu
	if sealed {
		mtu = min(mtu-dtlsOverhead, dtlsMaxPacket)
	}
	return []sctp.AssociationOption{
		sctp.WithNetConn(kernelConn{Conn: conn, pr: pr}),
		sctp.WithLoggerFactory(logs),
		sctp.WithMTU(uint32(mtu)),
		sctp.WithMaxReceiveBufferSize(uint32(t.cfg.ReceiveBuffer)),
		sctp.WithMaxMessageSize(uint32(fragHeaderLen + maxFragment)),
		// Packets to loopback are never corrupted, which is why the kernel
		// skips checksums there too.
		sctp.WithEnableZeroChecksum(t.cfg.ZeroChecksum || sealed || transport.IsLoopback(conn.RemoteAddr())),
	}
}

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	if t.err != nil {
		return nil, t.err
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("sctp: dial %s: %w", addr, err)
	}
	uc, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		return nil, fmt.Errorf("sctp: dial %s: %w", addr, err)
	}
	setBuffers(uc, t.cfg.SocketBuffer)
	ctx, cancel := context.WithTimeout(ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	dc, err := newDconn(uc)
	if err != nil {
		return nil, fmt.Errorf("sctp: dial %s: %w", addr, err)
	}
	dc.hook.set(func(error) { _ = dc.Close() })
	var conn assocConn = dc
	p := t.pathTo(ua)
	sealed := t.cfg.TLS.Dial(ua)
	pr := t.prober()
	if sealed {
		dc.sealed, pr = true, nil
		sc, err := dialDTLS(ctx, dc, cfg.Secret, p.mtu, !t.cfg.pionRecords, t.logf)
		if err != nil {
			_ = dc.Close()
			return nil, fmt.Errorf("sctp: dial %s: %w", addr, err)
		}
		conn = sc
	}
	var opts []sctp.ClientOption
	for _, o := range t.options(dialPorts(conn), conn.garbage(), pr, p, sealed) {
		opts = append(opts, o)
	}
	pa, err := sctp.ClientContext(ctx, opts...)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("sctp: dial %s: %w", addr, ctxErr(ctx, err))
	}
	a, err := t.handshake(ctx, pa, conn, pr, false, t.logf, func(c transport.HandshakeConn) (transport.HandshakeResult, func(), error) {
		res, err := transport.DialHandshake(ctx, c, cfg)
		return res, nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("sctp: dial %s: %w", addr, err)
	}
	return a, nil
}

// prober returns a path MTU prober for a new association, or nil when the
// MTU is fixed by the configuration.
func (t *Transport) prober() *prober {
	if t.cfg.MTU != 0 {
		return nil
	}
	return newProber()
}

// hsFunc runs one side of the braid handshake.
type hsFunc func(transport.HandshakeConn) (transport.HandshakeResult, func(), error)

// handshake runs the braid handshake on stream 0 of an established pion
// association and builds the Association. On failure pa is aborted.
func (t *Transport) handshake(ctx context.Context, pa *sctp.Association, conn assocConn, pr *prober, listener bool, logf func(string, ...any), run hsFunc) (*Association, error) {
	hook := conn.garbage()
	gate := &streamGate{strict: listener}
	go gate.acceptLoop(pa)
	hook.set(func(error) { go pa.Abort("malformed packet during handshake") })
	stop := context.AfterFunc(ctx, func() { pa.Abort("handshake timed out") })
	// Before the handshake's first DATA chunk, so that the association
	// starts with one initial window per flow (the fork's SetFlows).
	local := isLocal(conn.RemoteAddr())
	cc := t.cfg.ccFor(local)
	err := setCC(pa, cc)
	pa.SetFlows(initialFlows(&t.cfg, local, cc))
	pa.SetPacing(!t.cfg.Unpaced && !local)
	pa.SetHyStart(!t.cfg.NoHyStart && !local)
	var ctl *sctp.Stream
	if err == nil {
		ctl, err = pa.OpenStream(0, ppi)
	}
	var res transport.HandshakeResult
	var release func()
	if err == nil {
		hc := hsConn{st: ctl}
		if listener {
			hc.gate = gate
		}
		res, release, err = run(hc)
	}
	if !stop() && err == nil {
		err = ctx.Err()
		if release != nil {
			release()
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctxErr(ctx, err)
		}
		if v := gate.abortedFor(); v != nil {
			err = v
		}
		t.drop(pa, conn, err)
		return nil, err
	}
	_ = ctl.SetReadDeadline(time.Time{})
	a, err := newAssociation(setup{cfg: &t.cfg, pa: pa, ctl: ctl, conn: conn, hook: hook, life: conn.signs(),
		gate: gate, res: res, release: release, logf: logf, probe: pr})
	if err != nil {
		pa.Abort(err.Error())
		_ = pa.Close()
		_ = conn.Close()
		if release != nil {
			release()
		}
	}
	return a, err
}

// drop ends an association whose handshake failed. A refusal is shut down
// gracefully so that the reject message reaches the dialer.
func (t *Transport) drop(pa *sctp.Association, conn net.Conn, err error) {
	graceful := false
	if errors.Is(err, transport.ErrRefused) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		graceful = pa.Shutdown(ctx) == nil
		cancel()
	}
	if !graceful {
		pa.Abort(err.Error())
	}
	_ = pa.Close()
	_ = conn.Close()
}

// ctxErr prefers the context's error when it has ended.
func ctxErr(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return fmt.Errorf("%w (%v)", ce, err)
	}
	return err
}

func (t *Transport) logf(format string, args ...any) {
	t.cfg.Logger.Warn(fmt.Sprintf(format, args...))
}

func setBuffers(c *net.UDPConn, n int) {
	_ = c.SetReadBuffer(n)
	_ = c.SetWriteBuffer(n)
}

package sctp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/preauth"
	"github.com/pion/sctp"
)

var _ transport.Listener = (*Listener)(nil)

// Listener accepts SCTP associations on one UDP port.
type Listener struct {
	t   *Transport
	cfg transport.ListenConfig
	m   *mux

	refusals  preauth.Refusals  // aggregates the log lines of refused peers
	ready     chan *Association // handshaken, waiting for Accept
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // handshake goroutines
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	if t.err != nil {
		return nil, t.err
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("sctp: listen %s: %w", addr, err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("sctp: listen %s: %w", addr, err)
	}
	setBuffers(pc, t.cfg.SocketBuffer)
	inits, err := newInitTemplate(t.cfg.ReceiveBuffer)
	if err != nil {
		_ = pc.Close()
		return nil, err
	}
	l := &Listener{t: t, cfg: cfg, ready: make(chan *Association, t.cfg.AcceptBacklog), closed: make(chan struct{})}
	l.m, err = newMux(pc, t.cfg.MaxHalfOpen, inits, l.serve, func(msg string, args ...any) { t.cfg.Logger.Debug(msg, args...) })
	if err != nil {
		return nil, fmt.Errorf("sctp: listen %s: %w", addr, err)
	}
	l.m.zeroOK = func(peer netip.AddrPort) bool {
		return t.cfg.ZeroChecksum || transport.IsLoopback(net.UDPAddrFromAddrPort(peer))
	}
	l.m.plainOK = func(peer netip.AddrPort) bool { return t.cfg.TLS.AcceptPlain(net.UDPAddrFromAddrPort(peer)) }
	l.refusals.Log = l.logf
	l.m.refused = func(peer netip.AddrPort) {
		err := fmt.Errorf("%w: plaintext SCTP, and data-plane TLS is %s", transport.ErrAuth, t.cfg.TLS)
		l.refuse(peer, err, "sctp: refused plaintext SCTP from %s: data-plane TLS is %s, so this listener takes only DTLS from it "+
			"(give the peer's braid a matching --data-plane-tls, or a newer braid)", peer, t.cfg.TLS)
	}
	l.m.start()
	return l, nil
}

// Addr implements transport.Listener.
func (l *Listener) Addr() net.Addr { return l.m.sock.localAddr() }

// Accept implements transport.Listener.
func (l *Listener) Accept(ctx context.Context) (transport.Association, error) {
	select {
	case a := <-l.ready:
		return a, nil
	case <-l.closed:
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements transport.Listener: it stops accepting, aborts
// associations still in their handshake or waiting for Accept, and leaves
// accepted ones open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.m.close()
		l.wg.Wait()
		l.refusals.Close()
		for {
			select {
			case a := <-l.ready:
				a.Abort(transport.ErrClosed)
			default:
				return
			}
		}
	})
	return nil
}

// logf logs a line about the listener's peers: to its Logf if it has
// one, else to the transport's logger.
func (l *Listener) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
		return
	}
	l.t.logf(format, args...)
}

// refuse reports a peer refused, or whose handshake failed: to Refused,
// and to the log through the aggregator (a line per source per interval).
func (l *Listener) refuse(peer netip.AddrPort, err error, format string, args ...any) {
	if l.cfg.Refused != nil {
		l.cfg.Refused(net.UDPAddrFromAddrPort(peer), err)
	}
	l.refusals.Note(peer.Addr(), format, args...)
}

// serve is called by the mux for a new peer that returned a valid cookie.
func (l *Listener) serve(c *pconn) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		a, err := l.establish(c)
		l.m.established(c)
		if err != nil {
			l.refuse(c.raddr, err, "sctp: association from %s failed: %v", c.raddr, err)
			return
		}
		select {
		case l.ready <- a:
		case <-l.closed:
			a.Abort(transport.ErrClosed)
		}
	}()
}

// establish runs the SCTP and braid handshakes for one new peer.
func (l *Listener) establish(c *pconn) (*Association, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.t.cfg.HandshakeTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	go func() {
		select {
		case <-l.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	var conn assocConn = c
	p := l.t.pathTo(c.RemoteAddr())
	pr := l.t.prober()
	if c.sealed {
		pr = nil
		sc, err := acceptDTLS(ctx, c, l.cfg.Secret, p.mtu, !l.t.cfg.pionRecords, l.logf)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.slot.Proved() // its certificate chains to the cluster's authority
		conn = sc
	}
	pa, err := l.associate(ctx, c, conn, pr, p)
	if err != nil {
		_ = conn.Close()
		return nil, ctxErr(ctx, err)
	}
	return l.t.handshake(ctx, pa, conn, pr, true, l.logf, func(hc transport.HandshakeConn) (transport.HandshakeResult, func(), error) {
		return transport.ListenHandshake(ctx, c.slot.Conn(hc), c.slot.Config(l.cfg, nil))
	})
}

// associate makes the pion association over conn: over DTLS, a server
// that answers the peer's INIT; in plaintext, where the mux has answered
// it already (init_cookie.go), one built from both INITs (SNAP), sending
// from the SCTP ports the peer sent its INIT to.
func (l *Listener) associate(ctx context.Context, c *pconn, conn assocConn, pr *prober, p path) (*sctp.Association, error) {
	if c.snap == nil {
		var opts []sctp.ServerOption
		for _, o := range l.t.options(conn, conn.garbage(), pr, p, c.sealed) {
			opts = append(opts, o)
		}
		return sctp.ServerWithOptions(opts...)
	}
	c.rtt.rtt.Store(int64(max(c.snap.rtt, 1)))
	var nc net.Conn = conn
	if c.snap.ports != [2]uint16{pionPort, pionPort} {
		nc = &portConn{Conn: conn, src: c.snap.ports[0], dst: c.snap.ports[1]}
	}
	opts := []sctp.ClientOption{sctp.WithSNAP(c.snap.local, c.snap.remote)}
	for _, o := range l.t.options(nc, conn.garbage(), pr, p, false) {
		opts = append(opts, o)
	}
	return sctp.ClientContext(ctx, opts...)
}

package ksctp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/preauth"
)

// Listen binds addr and accepts associations in the background; Accept
// yields those that passed the handshake.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	ap, err := resolve(context.Background(), addr)
	if err != nil {
		return nil, err
	}
	sa, family := sockaddr(ap)
	fd, err := newSocket(family, &t.cfg)
	if err != nil {
		return nil, err
	}
	if family == unix.AF_INET6 {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ksctp: bind %s: %w", addr, err)
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("ksctp: listen %s: %w", addr, err)
	}
	local, _ := unix.Getsockname(fd)
	c, err := newConn(fd, "sctp-listener:"+addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{t: t, c: c, cfg: cfg, addr: addrOf(local), ctx: ctx, cancel: cancel,
		ready: make(chan transport.Association)}
	l.refusals.Log = l.logf
	l.wg.Go(l.acceptLoop)
	return l, nil
}

// listener owns an accept loop and one goroutine per handshake in
// progress; Close stops and waits for all of them.
type listener struct {
	t      *Transport
	c      *conn
	cfg    transport.ListenConfig
	addr   Addr
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan transport.Association
	wg     sync.WaitGroup
	once   sync.Once
	// refusals aggregates the lines about refused peers: one per source
	// per interval, not one per peer.
	refusals preauth.Refusals
}

func (l *listener) Addr() net.Addr { return l.addr }

func (l *listener) Accept(ctx context.Context) (transport.Association, error) {
	select {
	case a := <-l.ready:
		return a, nil
	case <-l.ctx.Done():
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *listener) Close() error {
	l.once.Do(func() {
		l.cancel()
		l.c.f.Close()
		l.wg.Wait()
		l.refusals.Close()
	})
	return nil
}

func (l *listener) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
}

// refuse reports a peer refused, or whose handshake failed: to Refused,
// and to the log through the aggregator.
func (l *listener) refuse(peer Addr, err error, format string, args ...any) {
	if l.cfg.Refused != nil {
		l.cfg.Refused(peer, err)
	}
	l.refusals.Note(peer.Addr(), format, args...)
}

func (l *listener) acceptLoop() {
	for {
		var nfd int
		var aerr error
		err := l.c.rc.Read(func(fd uintptr) bool {
			nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			return aerr != unix.EAGAIN
		})
		if err == nil {
			err = aerr
		}
		switch {
		case l.ctx.Err() != nil:
			if err == nil {
				unix.Close(nfd)
			}
			return
		case errors.Is(err, unix.ECONNABORTED), errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			l.logf("ksctp: accept: %v", err)
			return
		}
		l.wg.Go(func() { l.handshake(nfd) })
	}
}

// handshake runs the listener's side on a new socket and hands the
// association to Accept.
func (l *listener) handshake(fd int) {
	cfg := l.t.cfg
	if err := setOptions(fd, &cfg); err != nil {
		unix.Close(fd)
		l.logf("ksctp: %v", err)
		return
	}
	if encapsulated(fd) {
		if err := capPathMTU(fd); err != nil {
			unix.Close(fd)
			l.logf("ksctp: %v", err)
			return
		}
	}
	c, err := newConn(fd, "sctp-accepted")
	if err != nil {
		l.logf("ksctp: %v", err)
		return
	}
	var pa Addr
	peer := "unknown peer"
	if sa, err := unix.Getpeername(fd); err == nil {
		pa = addrOf(sa)
		peer = pa.String()
		if !cfg.TLS.AcceptPlain(pa) {
			c.f.Close()
			l.refuse(pa, fmt.Errorf("%w: kernel SCTP cannot encrypt, and data-plane TLS is %s", transport.ErrAuth, cfg.TLS),
				"ksctp: refused %s: kernel SCTP cannot encrypt, and data-plane TLS is %s for it "+
					"(it must reach this host's userspace stack over UDP, or both ends need --data-plane-tls=off)", peer, cfg.TLS)
			return
		}
	}
	ctx, cancel := context.WithTimeout(l.ctx, orDefault(cfg.HandshakeTimeout, defaultHandshakeTimeout))
	defer cancel()
	undo := c.deadlineFor(ctx)
	hc := &hsConn{c: c}
	res, release, err := l.handshakeOn(ctx, c, hc)
	undo()
	if err != nil {
		c.f.Close()
		l.refuse(pa, err, "ksctp: handshake with %s failed: %v", peer, err)
		return
	}
	a := newAssoc(c, res, hc.early, release, &l.t.cfg)
	select {
	case l.ready <- a:
	case <-l.ctx.Done():
		a.Abort(transport.ErrClosed)
	}
}

func (l *listener) handshakeOn(ctx context.Context, c *conn, hc *hsConn) (transport.HandshakeResult, func(), error) {
	n, err := assocStreams(c)
	if err != nil {
		return transport.HandshakeResult{}, nil, err
	}
	cfg := l.cfg
	cfg.MaxStreams = capStreams(cfg.MaxStreams, n)
	return transport.ListenHandshake(ctx, hc, cfg)
}

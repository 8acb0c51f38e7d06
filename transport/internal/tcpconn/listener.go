// Package tcpconn holds the TCP plumbing shared by braid's TCP transports:
// dialing, handshake deadlines, and a listener that runs handshakes
// concurrently and hands out the associations that pass.
package tcpconn

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/preauth"
)

// Listener accepts associations for a transport built on TCP: it runs an
// accept loop and one handshake goroutine per connection, and hands out the
// associations that pass. Handshake errors are logged through Logf and the
// connection dropped.
//
// Connections whose peer has not authenticated yet are bounded by a
// preauth.Gate: in total and per source address, one evicted when a
// newcomer would exceed a bound (silent ones first), and each given about a
// second to send its first bytes. A connection leaves the gate once its
// peer has proved the secret: its TLS certificate chains to the cluster's
// authority, or (in plaintext) its MAC checked out.
type Listener struct {
	ln      *net.TCPListener
	logf    func(string, ...any)
	timeout time.Duration
	setup   SetupFunc
	sec     Options

	gate      preauth.Gate
	refused   func(net.Addr, error)
	refusals  preauth.Refusals // a line per source per interval, not per peer
	ready     chan transport.Association
	closed    chan struct{}
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and the handshakes
}

var _ transport.Listener = (*Listener)(nil)

// errEvicted ends the handshake of a connection pushed out of the gate.
var errEvicted = errors.New("unauthenticated for too long, or evicted by newer connections (a flood of unauthenticated peers?)")

// ErrHandedOff is returned by a SetupFunc that passed its connection to
// another association's setup (tcpn's extra connections); nothing is logged.
var ErrHandedOff = errors.New("tcpconn: connection handed off")

// SetupFunc turns an accepted connection into an association; it must
// honour ctx (cancelled at the handshake timeout, on eviction from the
// gate, or when the listener closes) and close c when it fails. It reads
// the handshake through slot.Conn and passes slot.Config's ListenConfig to
// transport.ListenHandshake, so that the slot learns when the peer spoke
// and when it authenticated.
type SetupFunc func(ctx context.Context, c Conn, slot *preauth.Slot) (transport.Association, error)

// Listen binds addr and starts accepting with setup; sec says which peers
// must use TLS (accept). Peers whose handshake fails are reported to
// refused, if not nil, each one, and to logf through a preauth.Refusals.
func Listen(name, addr string, timeout time.Duration, logf func(string, ...any), refused func(net.Addr, error), sec Options, setup SetupFunc) (*Listener, error) {
	lc := net.ListenConfig{Control: controlCC(sec.CC)}
	lc.SetMultipathTCP(sec.MPTCP)
	nl, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, err
	}
	ln := nl.(*net.TCPListener)
	if logf == nil {
		logf = func(string, ...any) {}
	}
	prefixed := func(format string, args ...any) { logf(name+": "+format, args...) }
	l := &Listener{ln: ln, logf: prefixed, timeout: timeout, setup: setup, sec: sec, refused: refused,
		ready: make(chan transport.Association), closed: make(chan struct{})}
	l.refusals.Log = prefixed
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Go(l.acceptLoop)
	return l, nil
}

func (l *Listener) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.logf("accept: %v", err)
			select {
			case <-time.After(backoff):
			case <-l.closed:
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		tune(c)
		ctx, cancel := context.WithCancelCause(l.ctx)
		// A dialer sends its first bytes right after its handshake: the
		// gate looks for them before it would evict the connection, so
		// that a flood of idle connections accepted before its goroutine
		// runs does not evict it.
		slot := l.gate.EnterConn(preauth.Source(c.RemoteAddr()), func() bool { return hasData(c) }, func() { cancel(errEvicted) })
		l.wg.Go(func() {
			defer cancel(nil)
			defer slot.Leave()
			l.handshake(ctx, c, slot)
		})
	}
}

// handshake sets up one association and waits for Accept to take it.
func (l *Listener) handshake(ctx context.Context, c *net.TCPConn, slot *preauth.Slot) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	remote := c.RemoteAddr()
	sc, err := accept(ctx, c, l.sec, slot)
	var a transport.Association
	if err == nil {
		a, err = l.setup(ctx, sc, slot)
	}
	if errors.Is(err, ErrHandedOff) {
		return
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), errEvicted) {
			err = errEvicted
		}
		if l.refused != nil {
			l.refused(remote, err)
		}
		l.refusals.Note(preauth.Source(remote), "dropped peer %s: %v", remote, err)
		return
	}
	select {
	case l.ready <- a:
	case <-l.closed:
		a.Abort(transport.ErrClosed)
	}
}

// Accept returns the next association that passed the handshake.
func (l *Listener) Accept(ctx context.Context) (transport.Association, error) {
	select {
	case a := <-l.ready:
		return a, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, transport.ErrClosed
	}
}

// Addr is the bound address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close stops accepting and waits for pending handshakes to give up.
// Associations already returned by Accept stay open.
func (l *Listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		l.cancel()
		err = l.ln.Close()
		l.wg.Wait()
		l.refusals.Close()
	})
	return err
}

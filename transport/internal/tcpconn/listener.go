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
)

// Listener accepts associations for a transport built on TCP: it runs an
// accept loop and one handshake goroutine per connection, and hands out the
// associations that pass. Handshake errors are logged through Logf and the
// connection dropped.
type Listener struct {
	ln      *net.TCPListener
	logf    func(string, ...any)
	timeout time.Duration
	setup   SetupFunc

	slots     chan struct{} // one per handshake under way, at most maxPending
	ready     chan transport.Association
	closed    chan struct{}
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and the handshakes
}

var _ transport.Listener = (*Listener)(nil)

// maxPending bounds concurrent handshakes, so that a flood of silent
// connections costs at most this many goroutines until they time out.
const maxPending = 256

// ErrHandedOff is returned by a SetupFunc that passed its connection to
// another association's setup (tcpn's extra connections); nothing is logged.
var ErrHandedOff = errors.New("tcpconn: connection handed off")

// SetupFunc turns an accepted connection into an association; it must
// honour ctx (cancelled at the handshake timeout or when the listener
// closes) and close c when it fails.
type SetupFunc func(ctx context.Context, c *net.TCPConn) (transport.Association, error)

// Listen binds addr and starts accepting with setup.
func Listen(name, addr string, timeout time.Duration, logf func(string, ...any), setup SetupFunc) (*Listener, error) {
	la, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenTCP("tcp", la)
	if err != nil {
		return nil, err
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	prefixed := func(format string, args ...any) { logf(name+": "+format, args...) }
	l := &Listener{ln: ln, logf: prefixed, timeout: timeout, setup: setup,
		slots: make(chan struct{}, maxPending),
		ready: make(chan transport.Association), closed: make(chan struct{})}
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
		select {
		case l.slots <- struct{}{}:
		default:
			l.logf("dropped peer %s: %d handshakes already under way", c.RemoteAddr(), maxPending)
			c.Close()
			continue
		}
		tune(c)
		l.wg.Go(func() {
			defer func() { <-l.slots }()
			l.handshake(c)
		})
	}
}

// handshake sets up one association and waits for Accept to take it.
func (l *Listener) handshake(c *net.TCPConn) {
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	defer cancel()
	remote := c.RemoteAddr()
	a, err := l.setup(ctx, c)
	if errors.Is(err, ErrHandedOff) {
		return
	}
	if err != nil {
		l.logf("dropped peer %s: %v", remote, err)
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
	})
	return err
}

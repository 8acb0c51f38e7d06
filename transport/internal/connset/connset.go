package connset

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
	"github.com/braidhq/braid/transport/internal/mux"
	"github.com/braidhq/braid/transport/internal/preauth"
	"github.com/braidhq/braid/transport/internal/tcpconn"
)

// gatherer is a listener's table of associations waiting for their other
// connections. Its zero value is not ready: use newGatherer.
type gatherer struct {
	name   string // the transport's, for errors
	label  string
	secret []byte

	mu      sync.Mutex // guards pending and each pending's fields
	pending map[assocToken]*pending
}

// pending is an association whose extra connections are still arriving.
type pending struct {
	conns  []mux.Conn // by index; conns[0] ran the handshake
	joined int
	full   chan struct{} // closed when every connection has joined
	// arrived tells the listener's gate that one announced connection
	// has joined (preauth.Slot.Expect).
	arrived func()
}

// newGatherer returns transport name's gatherer for joins made with label
// and secret.
func newGatherer(name, label string, secret []byte) *gatherer {
	return &gatherer{name: name, label: label, secret: secret, pending: make(map[assocToken]*pending)}
}

// gather waits, on the listener's side, for the n-1 other connections of
// the association whose handshake c ran: it sends the token on c and
// returns the n connections by index, c first. It closes those that joined
// if it fails. Meanwhile the gate counts the dialer's n-1 connections as
// announced (slot.Expect), so that they do not evict one another while
// their joins are in flight.
func (g *gatherer) gather(ctx context.Context, c mux.Conn, hc frame.HandshakeConn, slot *preauth.Slot, n int) ([]mux.Conn, error) {
	var token assocToken
	rand.Read(token[:])
	arrived, done := slot.Expect(n - 1)
	defer done()
	p := &pending{conns: make([]mux.Conn, n), full: make(chan struct{}), arrived: arrived}
	p.conns[0] = c
	if n == 1 {
		close(p.full)
	}
	g.mu.Lock()
	g.pending[token] = p
	g.mu.Unlock()
	err := hc.WriteMsg(appendToken(nil, token))
	if err == nil {
		select {
		case <-p.full:
		case <-ctx.Done():
			err = fmt.Errorf("%w: waiting for %d more connections: %w", transport.ErrProtocol, n-1, ctx.Err())
		}
	}
	g.mu.Lock()
	delete(g.pending, token)
	g.mu.Unlock()
	if err != nil {
		CloseAll(p.conns[1:])
		return nil, err
	}
	return p.conns, nil
}

// handOff joins c, whose first message msg is a join, to its association;
// once joined, c belongs to it, and handOff returns tcpconn.ErrHandedOff
// for the listener to let go of c.
func (g *gatherer) handOff(ctx context.Context, c tcpconn.Conn, hc frame.HandshakeConn, stop func() bool, msg []byte) error {
	if err := g.join(msg, c, hc); err != nil {
		return fmt.Errorf("%s: %w", g.name, tcpconn.Settle(ctx, c, stop, err))
	}
	stop()
	c.SetDeadline(time.Time{})
	return tcpconn.ErrHandedOff
}

// join attaches c to the pending association named in msg and acks it.
func (g *gatherer) join(msg []byte, c tcpconn.Conn, hc frame.HandshakeConn) error {
	token, i, err := parseJoin(msg, g.label, g.secret)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pending[token]
	switch {
	case p == nil:
		return fmt.Errorf("%w: unknown or expired association token", transport.ErrProtocol)
	case i < 1 || i >= len(p.conns) || p.conns[i] != nil:
		return fmt.Errorf("%w: join for connection %d of %d is out of range or repeated", transport.ErrProtocol, i, len(p.conns))
	}
	// The ack goes out before the association can start sending on c.
	if err := hc.WriteMsg([]byte(ackMagic)); err != nil {
		return err
	}
	p.conns[i] = c
	p.arrived()
	if p.joined++; p.joined == len(p.conns)-1 {
		close(p.full)
	}
	return nil
}

// routeWait bounds the connecting of a join through a route, an address of
// the listener's other than the dialed one: long enough for a SYN lost
// once, short enough that a path that is down costs a dial little. The
// connection then goes to the dialed address, whose path the first
// connection has just proved; the association has one path fewer, not a
// failed dial, and a server can reach a worker whatever became of its
// other paths. Only the connecting (TCP, and TLS if on) falls back: once
// the join is written, the listener may have taken it, and a second join
// for the same connection would be refused.
const routeWait = 3 * time.Second

// RouteMemory remembers, for routeRetry, the routes a transport's dials
// could not reach: meanwhile its dials send their connections to the
// dialed address at once, instead of waiting routeWait for each route
// again (a server redialing a worker whose path is down). Its zero value
// is ready; a nil one remembers nothing.
type RouteMemory struct {
	mu   sync.Mutex
	dead map[string]time.Time // route's host → when it may be tried again
}

// routeRetry is how long a RouteMemory keeps a route that failed.
const routeRetry = 30 * time.Second

// errRecentlyDown is why a dial did not try a route its transport's
// memory holds.
var errRecentlyDown = fmt.Errorf("it failed for a dial within the last %v", routeRetry)

// routeHost is the host of route to (host:port): what fails is the path
// to the host, whichever worker listens there.
func routeHost(to string) string {
	if host, _, err := net.SplitHostPort(to); err == nil {
		return host
	}
	return to
}

// down reports whether route to failed within routeRetry.
func (m *RouteMemory) down(to string) bool {
	if m == nil {
		return false
	}
	to = routeHost(to)
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.dead[to]
	if ok && time.Now().After(until) {
		delete(m.dead, to)
		return false
	}
	return ok
}

// failed records that route to failed now.
func (m *RouteMemory) failed(to string) {
	if m == nil {
		return
	}
	to = routeHost(to)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead == nil {
		m.dead = map[string]time.Time{}
	}
	m.dead[to] = time.Now().Add(routeRetry)
}

// fallback is a dial's record of the routes it could not reach.
type fallback struct {
	home string // the dialed address
	logf func(string, ...any)
	n    int // connections in the association
	mem  *RouteMemory

	mu   sync.Mutex
	dead map[string]error // routes that failed, and how
}

// join opens connection i to to, or to home when to is a route that fails
// to connect within routeWait, or that failed for an earlier join of this
// dial or, within routeRetry, of another dial of the transport, saying why
// to logf; and joins it to the association.
func (f *fallback) join(ctx context.Context, to string, sec tcpconn.Options, label string, token assocToken, i int) (mux.Conn, error) {
	var c tcpconn.Conn
	var err error
	if to == f.home || f.failed(to, i) {
		c, err = tcpconn.Dial(ctx, f.home, sec)
	} else {
		rctx, cancel := context.WithTimeout(ctx, routeWait)
		c, err = tcpconn.Dial(rctx, to, sec)
		cancel()
		if rerr := err; err != nil && ctx.Err() == nil {
			f.fail(to, i, err)
			if c, err = tcpconn.Dial(ctx, f.home, sec); err != nil {
				err = fmt.Errorf("%w (after route %s: %v)", err, to, rerr)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return joinOn(ctx, c, sec, label, token, i)
}

// failed reports whether route to failed for an earlier join, or is in
// the transport's memory, which is then logged as for connection i.
func (f *fallback) failed(to string, i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dead := f.dead[to]; dead {
		return true
	}
	if f.mem.down(to) {
		f.markLocked(to, i, errRecentlyDown)
		return true
	}
	return false
}

// fail records that route to failed for connection i, and logs it once.
func (f *fallback) fail(to string, i int, err error) {
	f.mem.failed(to)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.markLocked(to, i, err)
}

// markLocked records why route to is not used, and logs it once.
func (f *fallback) markLocked(to string, i int, err error) {
	if _, seen := f.dead[to]; seen {
		return
	}
	if f.dead == nil {
		f.dead = map[string]error{}
	}
	f.dead[to] = err
	if f.logf != nil {
		f.logf("connection %d of %d: route %s failed; its connections go to %s instead: %v", i+1, f.n, to, f.home, err)
	}
}

// joinOn joins c, just connected, to the association named by token as its
// connection i; it closes c if that fails.
func joinOn(ctx context.Context, c tcpconn.Conn, sec tcpconn.Options, label string, token assocToken, i int) (mux.Conn, error) {
	stop := tcpconn.InterruptOn(ctx, c)
	hc := frame.HandshakeConn{C: c}
	err := hc.WriteMsg(appendJoin(nil, label, sec.Secret, token, i))
	if err == nil {
		err = readAck(hc)
	}
	if err = tcpconn.Settle(ctx, c, stop, err); err != nil {
		return nil, err
	}
	return c, nil
}

// parallelJoins bounds the joins a dial has under way at once: enough to
// open 16 connections in four rounds on a long path, few enough that the
// dials of several workers on one host stay well within a listener's
// per-source bound on connections not yet authenticated
// (preauth.DefaultMaxPerSource, 32), beyond which it evicts the oldest.
const parallelJoins = 4

// joinAll opens connections 1 to n-1 of the association whose first
// connection is c, parallelJoins at a time, from the caller's network
// namespace, and returns all n by index. If one fails, the others are
// cancelled and closed, c too.
func joinAll(ctx context.Context, c mux.Conn, n int, sec tcpconn.Options, label string, token assocToken, route func(i int) (string, error), mem *RouteMemory, logf func(string, ...any)) ([]mux.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conns := make([]mux.Conn, n)
	conns[0] = c
	errs := make([]error, n)
	sem := make(chan struct{}, parallelJoins)
	follow, release := tcpconn.FollowNetns()
	defer release()
	home, err := route(0)
	if err != nil {
		c.Close()
		return nil, err
	}
	fb := &fallback{home: home, logf: logf, n: n, mem: mem}
	var wg sync.WaitGroup
	for i := 1; i < n && ctx.Err() == nil; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done(): // a join failed: start no more
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			to, err := route(i)
			if err == nil {
				err = follow()
			}
			if err == nil {
				conns[i], err = fb.join(ctx, to, sec, label, token, i)
			}
			if err != nil {
				errs[i] = fmt.Errorf("connection %d of %d: %w", i+1, n, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	// The cause is the failure of the lowest index that was not merely
	// cancelled, or the first one if all were (the dial's ctx ended).
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(err, context.Canceled)) {
			first = err
		}
	}
	for i := 1; i < n && first == nil; i++ {
		if conns[i] == nil { // the dial's ctx ended before this join started
			first = fmt.Errorf("connection %d of %d: %w", i+1, n, ctx.Err())
		}
	}
	if first != nil {
		CloseAll(conns)
		return nil, first
	}
	return conns, nil
}

// CloseAll closes the connections that are not nil.
func CloseAll(conns []mux.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// replayConn returns a message already read before the handshake reads on.
type replayConn struct {
	first []byte
	frame.HandshakeConn
}

func (r *replayConn) ReadMsg() ([]byte, error) {
	if p := r.first; p != nil {
		r.first = nil
		return p, nil
	}
	return r.HandshakeConn.ReadMsg()
}

// CountFunc says, once the handshake on an association's first connection
// is done, how many connections the association has; it may talk on hc to
// agree on it (ptcp's stripe count), or not (tcpn: one per stream).
type CountFunc func(hc frame.HandshakeConn, res transport.HandshakeResult) (int, error)

// MuxConfigFunc describes the association of the gathered connections to
// mux.New; release gives back what the listener's Admit hook granted.
type MuxConfigFunc func(res transport.HandshakeResult, release func()) mux.Config

// Listen binds addr and accepts transport name's associations of several
// connections each, joined with label: see setup.
func Listen(name, addr string, timeout time.Duration, sec tcpconn.Options, label string, cfg transport.ListenConfig, count CountFunc, muxConfig MuxConfigFunc) (*tcpconn.Listener, error) {
	g := newGatherer(name, label, cfg.Secret)
	return tcpconn.Listen(name, addr, timeout, cfg.Logf, cfg.Refused, sec, func(ctx context.Context, c tcpconn.Conn, slot *preauth.Slot) (transport.Association, error) {
		return g.setup(ctx, c, slot, cfg, count, muxConfig)
	})
}

// setup is a tcpconn.SetupFunc's work for a transport of several
// connections per association: a connection whose first message is a join
// is handed to its association (tcpconn.ErrHandedOff); any other runs the
// handshake, then count, then waits for the others to join, and becomes an
// association over them. A join carries its own proof (its MAC), checked
// at once; a handshake leaves the gate once the dialer's MAC checks out
// (slot.Config).
func (g *gatherer) setup(ctx context.Context, c tcpconn.Conn, slot *preauth.Slot, cfg transport.ListenConfig, count CountFunc, muxConfig MuxConfigFunc) (transport.Association, error) {
	stop := tcpconn.InterruptOn(ctx, c)
	hc := frame.HandshakeConn{C: c}
	first, err := slot.Conn(hc).ReadMsg()
	if err == nil && IsJoin(first) {
		return nil, g.handOff(ctx, c, hc, stop, first)
	}
	var res transport.HandshakeResult
	release := func() {}
	if err == nil {
		res, release, err = transport.ListenHandshake(ctx, &replayConn{first, hc}, slot.Config(cfg, nil))
	}
	n := 0
	if err == nil {
		n, err = count(hc, res)
	}
	var conns []mux.Conn
	if err == nil {
		conns, err = g.gather(ctx, c, hc, slot, n)
	}
	if err = tcpconn.Settle(ctx, c, stop, err); err != nil {
		if len(conns) > 1 {
			CloseAll(conns[1:]) // joined, but the association will not start
		}
		release()
		return nil, err
	}
	return mux.New(conns, muxConfig(res, release)), nil
}

// Dial opens an association's connections from the dialer's side: the
// first to addr, where the handshake runs and count says how many there
// are, then the others, connection i to route(i), each joining the
// association (to route(0), addr, if route(i) cannot be reached: see
// routeWait; mem, if not nil, is the transport's RouteMemory).
// sec.Secret must be cfg.Secret.
func Dial(ctx context.Context, addr string, sec tcpconn.Options, label string, cfg transport.DialConfig, count CountFunc, route func(i int) (string, error), mem *RouteMemory) ([]mux.Conn, transport.HandshakeResult, error) {
	c, err := tcpconn.Dial(ctx, addr, sec)
	if err != nil {
		return nil, transport.HandshakeResult{}, err
	}
	stop := tcpconn.InterruptOn(ctx, c)
	hc := frame.HandshakeConn{C: c}
	res, err := transport.DialHandshake(ctx, hc, cfg)
	n := 0
	if err == nil {
		n, err = count(hc, res)
	}
	var token assocToken
	if err == nil {
		token, err = readToken(hc)
	}
	if err = tcpconn.Settle(ctx, c, stop, err); err != nil {
		return nil, res, err
	}
	conns, err := joinAll(ctx, c, n, sec, label, token, route, mem, cfg.Logf)
	if err != nil {
		return nil, res, err
	}
	return conns, res, nil
}

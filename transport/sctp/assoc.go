package sctp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/braidhq/braid/transport/internal/stripes"
	"github.com/pion/sctp"
)

var _ transport.Association = (*Association)(nil)

// ppi is the payload protocol identifier on every braid SCTP message.
const ppi = sctp.PayloadTypeWebRTCBinary

// Association is an SCTP association carrying braid streams. See the
// package comment for its layout.
type Association struct {
	cfg     *Config
	pa      *sctp.Association
	ctl     *sctp.Stream
	conn    net.Conn
	peer    transport.PeerInfo
	send    []*sendStream
	recv    []*recvStream
	data    []*sctp.Stream
	sched   *scheduler
	release func()
	logf    func(format string, args ...any)

	life     *alive.Clock  // the conn's record of traffic with the peer
	liveness time.Duration // the negotiated liveness bound

	// closeStarted is set when Close begins: new Sends fail at once, while
	// those under way finish (Close delivers them whole).
	closeStarted atomic.Bool

	ctlMu sync.Mutex // serialises writes on the control stream

	done     chan struct{} // closed when the association has ended
	finished chan struct{} // closed when teardown is complete
	endOnce  sync.Once
	errMu    sync.Mutex // guards err
	err      error
	readers  sync.WaitGroup // the reader goroutines and the keep-alive loop
}

// setup holds what an association is built from.
type setup struct {
	cfg     *Config
	pa      *sctp.Association
	ctl     *sctp.Stream
	conn    net.Conn
	hook    *garbageHook
	life    *alive.Clock
	gate    *streamGate
	res     transport.HandshakeResult
	release func()
	logf    func(format string, args ...any)
	probe   *prober // nil: the MTU is fixed
}

// newAssociation opens the data streams and starts the readers.
func newAssociation(s setup) (*Association, error) {
	n := s.res.Streams
	a := &Association{
		cfg: s.cfg, pa: s.pa, ctl: s.ctl, conn: s.conn, peer: s.res.Peer, release: s.release, logf: s.logf,
		life: s.life, liveness: s.res.Liveness,
		send: make([]*sendStream, n), recv: make([]*recvStream, n), data: make([]*sctp.Stream, n),
		done: make(chan struct{}), finished: make(chan struct{}),
	}
	// The setup counts as a reader until every reader is counted. A
	// failure from the hooks on (or a credit start cannot send) starts the
	// teardown, which waits for the readers, and a WaitGroup must not be
	// added to from zero once waited on (the race detector caught start
	// doing so in TestINITFlood).
	a.readers.Add(1)
	defer a.readers.Done()
	rb := &reasmBudget{max: s.cfg.MaxReassembly}
	for i := range n {
		st, err := s.pa.OpenStream(uint16(i+1), ppi)
		if err != nil {
			return nil, fmt.Errorf("sctp: open stream %d: %w", i, err)
		}
		a.data[i], a.send[i], a.recv[i] = st, newSendStream(), newRecvStream(s.cfg.StreamWindow, rb)
	}
	a.sched = newScheduler(s.pa, a.data, s.cfg.FragmentSize)
	s.hook.set(a.fail)
	s.gate.set(n, a.fail)
	a.start()
	if s.probe != nil {
		a.readers.Add(1)
		go a.probe(s.probe)
	}
	return a, nil
}

// start announces each stream's window and starts the reader goroutines
// and the keep-alive loop.
func (a *Association) start() {
	// The handshake set the flow count (initialFlows); the tuner moves it
	// from there unless Config.Flows fixes it, the peer is on this host or
	// the controller is not reno.
	if a.cfg.Flows == 0 && !isLocal(a.conn.RemoteAddr()) && a.pa.CongestionControl() == CCReno {
		tu := stripes.NewTuner(a.pa.Flows(), MinTunedFlows, MaxFlows)
		a.readers.Add(1)
		go a.tuneFlows(tu)
	}
	for i, r := range a.recv {
		if l := r.initialGrant(); l > 0 {
			a.sendCredit(i, l)
		}
	}
	a.readers.Add(len(a.recv) + 1)
	go a.readControl()
	if c, ok := a.conn.(assocConn); ok {
		c.setLinger(0)
		if !isLocal(a.conn.RemoteAddr()) {
			a.readers.Add(1)
			go a.coalesce(c)
		}
	}
	if a.liveness > 0 {
		a.startKeepAlive()
	}
	for i := range a.recv {
		go a.readData(i)
	}
}

// coalesce sets the conn's receive coalescing delay (coalesce.go) from
// the path's round-trip time (pathRTT), looking soon after the handshake
// and then less often, up to every coalesceEvery; it exits when the
// association ends. The delay only ever shrinks once set.
func (a *Association) coalesce(c assocConn) {
	defer a.readers.Done()
	hs, set := c.handshakeRTT(), time.Duration(-1)
	wait := 20 * time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-a.done:
			return
		}
		if d, ok := nextLinger(set, pathRTT(hs, msDuration(a.pa.MinRTT()))); ok {
			c.setLinger(d)
			set = d
		}
		wait = min(2*wait, coalesceEvery)
		t.Reset(wait)
	}
}

// coalesceEvery is how often, at most, coalesce looks at the RTT.
const coalesceEvery = 5 * time.Second

// Streams implements transport.Association.
func (a *Association) Streams() int { return len(a.send) }

// Peer implements transport.Association.
func (a *Association) Peer() transport.PeerInfo { return a.peer }

// LocalAddr implements transport.Association.
func (a *Association) LocalAddr() net.Addr { return a.conn.LocalAddr() }

// RemoteAddr implements transport.Association.
func (a *Association) RemoteAddr() net.Addr { return a.conn.RemoteAddr() }

// Done implements transport.Association.
func (a *Association) Done() <-chan struct{} { return a.done }

// Err implements transport.Association.
func (a *Association) Err() error {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	return a.err
}

// endErr is the error for an operation that found the association ended.
func (a *Association) endErr() error {
	if err := a.Err(); err != nil {
		return err
	}
	return transport.ErrClosed
}

// Recv implements transport.Association.
func (a *Association) Recv(ctx context.Context, s int) ([]byte, error) {
	if s < 0 || s >= len(a.recv) {
		return nil, fmt.Errorf("%w: %d of %d", transport.ErrBadStream, s, len(a.recv))
	}
	p, l, err := a.recv[s].recv(ctx)
	if l > 0 {
		a.sendCredit(s, l)
	}
	return p, err
}

// sendCredit tells the peer its new limit on stream s.
func (a *Association) sendCredit(s int, limit uint64) {
	var b [ctlCreditLen]byte
	a.ctlMu.Lock()
	_, err := a.ctl.WriteSCTP(appendCredit(b[:0], s, limit), ppi)
	a.ctlMu.Unlock()
	if err != nil {
		a.fail(fmt.Errorf("%w: control stream: %v", transport.ErrPeerClosed, err))
	}
}

// Close implements transport.Association: pending data is delivered, then
// the association shuts down (or is aborted after Config.CloseTimeout).
func (a *Association) Close() error {
	if a.closeStarted.CompareAndSwap(false, true) {
		a.drainSends()
	}
	a.terminate(transport.ErrClosed, false)
	return nil
}

// drainSends waits, up to CloseTimeout, for the messages being sent: it
// takes every stream's send lock and keeps it.
func (a *Association) drainSends() {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.CloseTimeout)
	defer cancel()
	for _, ss := range a.send {
		if ss.acquire(ctx, a.done) != nil {
			return
		}
	}
}

// Abort implements transport.Association.
func (a *Association) Abort(reason error) {
	if reason == nil {
		reason = errors.New("aborted")
	}
	a.terminate(fmt.Errorf("%w: %v", transport.ErrClosed, reason), true)
}

// fail aborts the association from inside (a reader or a hook) without
// waiting for the teardown, which waits for the readers.
func (a *Association) fail(err error) {
	select {
	case <-a.done:
		return
	default:
	}
	abort := errors.Is(err, transport.ErrProtocol) || errors.Is(err, transport.ErrMessageTooLarge) ||
		errors.Is(err, transport.ErrPeerLost)
	if abort {
		a.logf("sctp: aborting association with %s: %v", a.conn.RemoteAddr(), err)
	}
	go a.terminate(err, abort)
}

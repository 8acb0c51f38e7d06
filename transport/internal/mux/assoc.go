// Package mux is the association core shared by braid's TCP transports: a
// set of streams carried over one or more connections ("links") in the
// frame format of transport/internal/frame.
//
// With one link every stream is multiplexed onto it (transport "tcp"); with
// one link per stream each stream has its own connection and its own receive
// goroutine (transport "tcpn"); striped, every message is cut into blocks
// spread over all the links (transport "ptcp", stripe.go). Each link has a
// dedicated receive goroutine that reassembles messages into bounded
// per-stream queues; a full queue blocks that goroutine, and so every stream
// of its link.
//
// A keep-alive loop per association sends ping frames on idle links and
// ends the association with a *transport.PeerLostError once a link's
// reader has waited for the negotiated liveness (or, on a link whose peer
// announced idle, the idle bound) with nothing arriving;
// liveness.go explains why each link is watched, and how the loop avoids
// taking a stalled local reader for a dead peer.
package mux

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
	"github.com/braidhq/braid/transport/internal/msgq"
	"github.com/braidhq/braid/transport/internal/stripes"
	"golang.org/x/sync/semaphore"
)

// Conn is a link's connection; TCP connections qualify.
type Conn interface {
	net.Conn
	CloseWrite() error
}

// Config describes an association to New.
type Config struct {
	// Streams is the negotiated stream count: 1 link carries them all, or
	// there is one link per stream, unless Striped.
	Streams int
	// Striped spreads every stream's messages over all the links, in
	// blocks of BlockSize (zero or over frame.MaxPayload: MaxPayload) as
	// Driver says (stripe.go). Both ends must agree.
	Striped   bool
	Driver    Driver
	BlockSize int
	// SendStripes is how many of a striped association's links this side
	// sends blocks on, the first ones; zero (or more than there are)
	// means all. With TuneStripes it is where the tuner starts and the
	// fewest it sends on, and Probe reads each link's kernel counters for
	// it (stripetune.go): if it cannot read the first link's, the count
	// stays.
	SendStripes int
	TuneStripes bool
	Probe       func(net.Conn) (stripes.LinkSample, bool)
	Peer        transport.PeerInfo
	// Release, if set, is called once when the association has ended.
	Release func()
	// QueueBytes bounds each stream's receive queue.
	QueueBytes int
	// CloseTimeout bounds how long Close waits for the peer.
	CloseTimeout time.Duration
	// Liveness is the negotiated liveness bound (see liveness.go). Zero
	// turns pings and the silence clock off.
	Liveness time.Duration
	// WatchEach ends the association when one link is silent for
	// Liveness; without it, only when all are (a peer older than the
	// pinging of each link: transport.HandshakeResult.PeerPingsEach).
	WatchEach bool
	// IdleLiveness is the negotiated idle bound (liveness.go,
	// transport.HandshakeResult.IdleLiveness); zero: none, a link is
	// always watched with Liveness. It needs WatchEach.
	IdleLiveness time.Duration
	// PartialBytes bounds the messages under way (budget.go). Zero means
	// frame.MaxPartialBytes, which the transports use: both ends must
	// agree, so only tests set it.
	PartialBytes int64
}

// Assoc implements transport.Association over links.
type Assoc struct {
	cfg      Config
	links    []*link
	queues   []*msgq.Queue
	ssem     []chan struct{} // per stream, cap 1: held while a message is sent
	lclosed  chan struct{}   // closed by Close or Abort
	stop     chan struct{}   // closed by Close, Abort or fail: readers stop waiting for queue space
	stopOnce sync.Once
	done     chan struct{} // closed when the association has ended
	live     atomic.Int32  // receive goroutines still running
	closing  atomic.Bool   // peer sent Close on some link
	// closeStarted is set when Close begins: new Sends fail at once, while
	// those already under way finish.
	closeStarted atomic.Bool

	lv liveness // keep-alive state, see liveness.go

	recvBudget *recvBudget         // messages being reassembled, see budget.go
	sendBudget *semaphore.Weighted // multi-frame messages being sent on a shared link; nil with a link per stream

	// Striped associations only (stripe.go).
	sendSeq     []uint32 // per stream: the next block's number, guarded by ssem
	rrNext      atomic.Uint32
	reorders    []*reorder
	heldBudget  *recvBudget                   // blocks held until their turn
	linksClosed atomic.Int32                  // links the peer sent Close on
	blocksOut   atomic.Int64                  // blocks handed to writers and not yet written
	sending     atomic.Int32                  // links blocks go out on, the first ones
	wake        atomic.Pointer[chan struct{}] // closed (and replaced) when sending changes

	mu          sync.Mutex // guards err and localClosed
	err         error      // why the association ended (first cause)
	localClosed bool
}

var (
	_ transport.Association = (*Assoc)(nil)
	_ transport.Busier      = (*Assoc)(nil)
	_ transport.Watched     = (*Assoc)(nil)
)

// New starts an association over conns (1, or one per stream, or any number
// striped), its receive goroutines and its keep-alive loop. Cancelling is by
// Close or Abort; either way the goroutines have exited once Done is closed.
func New(conns []Conn, cfg Config) *Assoc {
	if len(conns) == 0 || !cfg.Striped && len(conns) != 1 && len(conns) != cfg.Streams {
		panic(fmt.Sprintf("mux: %d links for %d streams", len(conns), cfg.Streams))
	}
	a := &Assoc{
		cfg:     cfg,
		lclosed: make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	for range cfg.Streams {
		a.queues = append(a.queues, msgq.New(cfg.QueueBytes, 4096))
		a.ssem = append(a.ssem, make(chan struct{}, 1))
	}
	for _, c := range conns {
		a.links = append(a.links, &link{conn: c, wsem: make(chan struct{}, 1)})
	}
	shared := len(conns) == 1 && cfg.Streams > 1 || cfg.Striped
	if !cfg.WatchEach {
		a.cfg.IdleLiveness = 0 // an older peer: it sends no idle pings
	}
	if cfg.PartialBytes <= 0 {
		cfg.PartialBytes = frame.MaxPartialBytes
		a.cfg.PartialBytes = cfg.PartialBytes
	}
	// Striped, a message's blocks arrive by several links: a reader waits
	// for the others to complete theirs (see stripe.go).
	a.recvBudget = newRecvBudget(cfg.PartialBytes, !shared || cfg.Striped, a.stop)
	if shared {
		a.sendBudget = semaphore.NewWeighted(cfg.PartialBytes)
	}
	a.live.Store(int32(len(conns)))
	if cfg.Striped {
		a.startStriping()
	}
	a.startLiveness()
	for i := range a.links {
		go a.readLoop(i)
	}
	return a
}

// linkOf returns the link carrying stream s.
func (a *Assoc) linkOf(s int) *link {
	if len(a.links) == 1 {
		return a.links[0]
	}
	return a.links[s]
}

// Streams returns the negotiated stream count.
func (a *Assoc) Streams() int { return a.cfg.Streams }

// Done is closed when the association has ended.
func (a *Assoc) Done() <-chan struct{} { return a.done }

// Peer is what the handshake learned about the peer.
func (a *Assoc) Peer() transport.PeerInfo { return a.cfg.Peer }

// LocalAddr is the first link's local address.
func (a *Assoc) LocalAddr() net.Addr { return a.links[0].conn.LocalAddr() }

// RemoteAddr is the first link's remote address.
func (a *Assoc) RemoteAddr() net.Addr { return a.links[0].conn.RemoteAddr() }

// Err tells why the association ended; nil while it is open.
func (a *Assoc) Err() error {
	select {
	case <-a.done:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.err
	default:
		return nil
	}
}

// setErr records err as the cause unless one is recorded already.
func (a *Assoc) setErr(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

func (a *Assoc) cause() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		return transport.ErrPeerClosed
	}
	return a.err
}

// sendErr is why a Send must fail now, or nil.
func (a *Assoc) sendErr() error {
	select {
	case <-a.lclosed:
		return transport.ErrClosed
	case <-a.done:
		return a.cause()
	default:
	}
	if a.closing.Load() {
		return a.cause()
	}
	return nil
}

func (a *Assoc) checkStream(s int) error {
	if s < 0 || s >= a.cfg.Streams {
		return fmt.Errorf("%w: stream %d of %d", transport.ErrBadStream, s, a.cfg.Streams)
	}
	return nil
}

// fail ends the association because of err: links are closed, so that the
// receive goroutines exit and finish runs.
func (a *Assoc) fail(err error) {
	a.setErr(err)
	a.stopReaders()
	a.closeLinks()
}

// stopReaders wakes receive goroutines blocked on a full stream queue (a
// stream nobody reads), so that a failed or closed association ends even
// then.
func (a *Assoc) stopReaders() { a.stopOnce.Do(func() { close(a.stop) }) }

func (a *Assoc) closeLinks() {
	for _, l := range a.links {
		l.conn.Close()
	}
}

// failure is the association's recorded failure, or nil.
func (a *Assoc) failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// finish runs once, after the last receive goroutine has exited.
func (a *Assoc) finish() {
	a.stopReaders() // and a striped association's writers, after a peer's orderly close
	err := a.cause()
	for _, q := range a.queues {
		q.End(err)
	}
	a.closeLinks()
	a.stopLiveness()
	if a.cfg.Release != nil {
		a.cfg.Release()
	}
	close(a.done)
}

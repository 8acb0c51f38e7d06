package quic

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/msgq"
	quicgo "github.com/quic-go/quic-go"
)

var _ transport.Association = (*Association)(nil)

// Application error codes in CONNECTION_CLOSE.
const (
	codeClose quicgo.ApplicationErrorCode = 0
	codeAbort quicgo.ApplicationErrorCode = 1
)

// Association is a QUIC connection carrying braid streams.
type Association struct {
	cfg     *Config
	qc      *quicgo.Conn
	ctl     *quicgo.Stream
	streams []*quicgo.Stream
	locks   []chan struct{} // per-stream send semaphores (one message at a time)
	queues  []*msgq.Queue
	peer    transport.PeerInfo
	release func()
	logf    func(format string, args ...any)

	// idle is this side's configured liveness, the silence after which
	// quic-go gives up (keep-alive period plus idle timeout); liveness is
	// the negotiated bound. See peerErr.
	idle, liveness time.Duration

	local    chan struct{} // closed on local Close or Abort
	done     chan struct{} // closed when the association has ended
	finished chan struct{} // closed when teardown is complete
	peerFin  chan struct{} // closed when the control stream ends
	endOnce  sync.Once
	errMu    sync.Mutex // guards err
	err      error
	readers  sync.WaitGroup // data stream readers
}

func newAssociation(cfg *Config, qc *quicgo.Conn, ctl *quicgo.Stream, streams []*quicgo.Stream,
	res transport.HandshakeResult, idle time.Duration, release func(), logf func(string, ...any)) *Association {
	a := &Association{
		cfg: cfg, qc: qc, ctl: ctl, streams: streams, peer: res.Peer, release: release, logf: logf,
		idle: idle, liveness: res.Liveness,
		locks: make([]chan struct{}, len(streams)), queues: make([]*msgq.Queue, len(streams)),
		local: make(chan struct{}), done: make(chan struct{}), finished: make(chan struct{}), peerFin: make(chan struct{}),
	}
	for i := range streams {
		a.locks[i] = make(chan struct{}, 1)
		a.queues[i] = msgq.New(cfg.QueueBytes, 1<<16)
	}
	a.readers.Add(len(streams))
	for i := range streams {
		go a.readData(i)
	}
	go a.watch()
	return a
}

// Streams implements transport.Association.
func (a *Association) Streams() int { return len(a.streams) }

// Peer implements transport.Association.
func (a *Association) Peer() transport.PeerInfo { return a.peer }

// LocalAddr implements transport.Association.
func (a *Association) LocalAddr() net.Addr { return a.qc.LocalAddr() }

// RemoteAddr implements transport.Association.
func (a *Association) RemoteAddr() net.Addr { return a.qc.RemoteAddr() }

// Done implements transport.Association.
func (a *Association) Done() <-chan struct{} { return a.done }

// Err implements transport.Association.
func (a *Association) Err() error {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	return a.err
}

func (a *Association) endErr() error {
	if err := a.Err(); err != nil {
		return err
	}
	return transport.ErrClosed
}

func (a *Association) checkStream(s int) error {
	if s < 0 || s >= len(a.streams) {
		return fmt.Errorf("%w: %d of %d", transport.ErrBadStream, s, len(a.streams))
	}
	return nil
}

// Recv implements transport.Association.
func (a *Association) Recv(ctx context.Context, s int) ([]byte, error) {
	if err := a.checkStream(s); err != nil {
		return nil, err
	}
	p, err := a.queues[s].Pop(ctx, a.local)
	if errors.Is(err, transport.ErrClosed) {
		return nil, a.endErr()
	}
	return p, err
}

// readData reads length-prefixed messages from data stream i into its queue.
func (a *Association) readData(i int) {
	defer a.readers.Done()
	r := bufio.NewReaderSize(a.streams[i], 64<<10)
	for {
		p, err := readMessage(r)
		if err != nil {
			err = a.classify(err)
			a.queues[i].End(err)
			if errors.Is(err, transport.ErrProtocol) {
				a.fail(err)
			}
			return
		}
		if !a.queues[i].Push(p, a.done) {
			return
		}
	}
}

func readMessage(r *bufio.Reader) ([]byte, error) {
	n, err := readLen(r)
	if err != nil {
		return nil, err
	}
	// Grow with the bytes that arrive rather than trusting the length: a
	// peer announcing 64 MiB on every stream must not make us allocate it.
	const chunk = 1 << 20
	p := make([]byte, 0, min(uint64(n), chunk))
	for uint64(len(p)) < uint64(n) {
		k := len(p)
		step := int(min(uint64(n)-uint64(k), chunk))
		p = slices.Grow(p, step)[:k+step]
		if _, err := io.ReadFull(r, p[k:]); err != nil {
			return nil, noEOF(err)
		}
	}
	return p, nil
}

// noEOF turns an EOF inside a message into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// classify maps a stream read error to the transport's errors.
func (a *Association) classify(err error) error {
	select {
	case <-a.local:
		return a.endErr()
	default:
	}
	if errors.Is(err, transport.ErrProtocol) || errors.Is(err, transport.ErrMessageTooLarge) {
		return err
	}
	return a.peerErr(err)
}

// peerErr is peerErr, except that QUIC's idle timeout (no packet from the
// peer for the idle timeout despite keep-alive PINGs) means the peer was
// lost.
func (a *Association) peerErr(err error) error {
	var idle *quicgo.IdleTimeoutError
	if errors.As(err, &idle) {
		return &transport.PeerLostError{Silence: a.idle, Liveness: a.liveness}
	}
	return peerErr(err)
}

// fail aborts from inside (a reader) without waiting for the teardown.
func (a *Association) fail(err error) {
	a.logf("quic: aborting association with %s: %v", a.qc.RemoteAddr(), err)
	go a.terminate(err, codeAbort)
}

// Send implements transport.Association.
func (a *Association) Send(ctx context.Context, s int, p []byte) error {
	if err := a.checkStream(s); err != nil {
		return err
	}
	if len(p) > transport.MaxMessageSize {
		return fmt.Errorf("%w: %d bytes", transport.ErrMessageTooLarge, len(p))
	}
	select {
	case a.locks[s] <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-a.done:
		return a.endErr()
	}
	defer func() { <-a.locks[s] }()
	select {
	case <-a.done:
		return a.endErr()
	default:
	}
	return a.write(ctx, a.streams[s], p)
}

// write sends one message; ctx interrupts it through the write deadline. A
// message cut short leaves the stream unusable, so the association is
// aborted then.
func (a *Association) write(ctx context.Context, st *quicgo.Stream, p []byte) error {
	var mu sync.Mutex // guards fired
	fired, finished := false, false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		if !finished {
			fired = true
			_ = st.SetWriteDeadline(time.Unix(1, 0))
		}
		mu.Unlock()
	})
	n, err := writeMessage(st, p)
	stop()
	mu.Lock()
	finished = true
	if fired {
		_ = st.SetWriteDeadline(time.Time{})
	}
	mu.Unlock()
	switch {
	case err == nil:
		return nil
	case fired && n == 0:
		return ctx.Err()
	case fired:
		go a.terminate(fmt.Errorf("%w: send cancelled mid-message", transport.ErrClosed), codeAbort)
		return ctx.Err()
	}
	select {
	case <-a.done:
		return a.endErr()
	default:
		return a.peerErr(err)
	}
}

package ksctp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/braidhq/braid/transport/internal/sctpwire"
)

const defaultHandshakeTimeout = 10 * time.Second

// assoc is one kernel SCTP association. It owns three goroutines: the
// receive loop (which ends the association and runs finish on exit), the
// credit writer and the keep-alive loop.
type assoc struct {
	c        *conn
	streams  []*stream
	frag     int
	peer     transport.PeerInfo
	local    net.Addr
	remote   net.Addr
	closeTO  time.Duration
	release  func()
	ctx      context.Context // ends with the association
	cancel   context.CancelFunc
	done     chan struct{}  // closed by terminate
	finished chan struct{}  // closed when the goroutines are gone and the socket closed
	creditK  chan struct{}  // wakes the credit writer
	loops    sync.WaitGroup // the credit writer and the keep-alive loop
	clock    alive.Clock    // traffic with the peer, see liveness.go
	liveness time.Duration  // the negotiated liveness bound
	ctlPiece []byte         // the control message being read; owned by the receive loop

	mu  sync.Mutex // guards err
	err error

	// closeStarted is set when Close begins: new Sends fail at once, while
	// those under way finish (Close delivers them whole).
	closeStarted atomic.Bool
}

var _ transport.Association = (*assoc)(nil)

// newAssoc starts an association after its handshake; early holds what the
// handshake read on other streams than its own (see hsConn).
func newAssoc(c *conn, res transport.HandshakeResult, early []earlyPiece, release func(), cfg *Config) *assoc {
	a := &assoc{c: c, peer: res.Peer, release: release, liveness: res.Liveness,
		closeTO:  orDefault(cfg.CloseTimeout, 10*time.Second),
		done:     make(chan struct{}),
		finished: make(chan struct{}),
		creditK:  make(chan struct{}, 1),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	window := uint64(minWindow) // if the socket is already gone
	c.control(func(fd int) error {
		a.frag = fragSize(fd)
		window = recvWindow(fd)
		la, _ := unix.Getsockname(fd)
		ra, _ := unix.Getpeername(fd)
		a.local, a.remote = addrOf(la), addrOf(ra)
		return nil
	})
	for range res.Streams {
		st := newStream(window)
		st.grantLocked(true) // announce the window: see creditLoop
		a.streams = append(a.streams, st)
	}
	a.clock.Start()
	a.loops.Go(a.creditLoop)
	wake(a.creditK)
	a.startKeepAlive()
	go a.recvLoop(early)
	return a
}

func (a *assoc) Streams() int             { return len(a.streams) }
func (a *assoc) Done() <-chan struct{}    { return a.done }
func (a *assoc) LocalAddr() net.Addr      { return a.local }
func (a *assoc) RemoteAddr() net.Addr     { return a.remote }
func (a *assoc) Peer() transport.PeerInfo { return a.peer }

func (a *assoc) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// terminate records why the association ended; the first call wins.
func (a *assoc) terminate(err error) bool {
	a.mu.Lock()
	first := a.err == nil
	if first {
		a.err = err
	}
	a.mu.Unlock()
	if first {
		a.cancel()
		close(a.done)
	}
	return first
}

// finish runs once, on the receive loop's way out.
func (a *assoc) finish() {
	a.c.f.Close()
	a.loops.Wait()
	a.release()
	close(a.finished)
}

func (a *assoc) stream(s int) (*stream, error) {
	if s < 0 || s >= len(a.streams) {
		return nil, fmt.Errorf("%w: %d of %d", transport.ErrBadStream, s, len(a.streams))
	}
	return a.streams[s], nil
}

// Close shuts the association down gracefully: the kernel delivers what
// was sent before the peer sees the SCTP SHUTDOWN.
func (a *assoc) Close() error {
	if a.closeStarted.CompareAndSwap(false, true) {
		a.drainSends()
	}
	if a.terminate(transport.ErrClosed) {
		a.c.control(func(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) })
	}
	select {
	case <-a.finished:
	case <-time.After(a.closeTO):
		a.c.f.Close()
		<-a.finished
	}
	return nil
}

// drainSends waits, up to the close timeout, for the messages being sent:
// it takes every stream's send lock and keeps it.
func (a *assoc) drainSends() {
	t := time.NewTimer(a.closeTO)
	defer t.Stop()
	for _, st := range a.streams {
		select {
		case st.sendSem <- struct{}{}:
		case <-a.done:
			return
		case <-t.C:
			return
		}
	}
}

// Abort sends an SCTP ABORT carrying reason and closes the socket.
func (a *assoc) Abort(reason error) {
	a.abort(reason, fmt.Errorf("%w: aborted: %v", transport.ErrClosed, reason))
	<-a.finished
}

// abort is Abort without waiting, for use by the receive loop; err is
// what Err will report.
func (a *assoc) abort(reason, err error) {
	if !a.terminate(err) {
		a.c.f.Close()
		return
	}
	msg := []byte(fmt.Sprint(reason))
	if len(msg) > 256 {
		msg = msg[:256]
	}
	a.c.control(func(fd int) error {
		oob := sndInfoCmsg(0, 0, sctpAbortFlag)
		unix.SendmsgN(fd, msg, oob, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1})
	})
	a.c.f.Close()
}

// write sends one SCTP message. A socket failure is returned but does not
// end the association: the receive loop ends it once it has drained what
// the peer sent (a write fails with EPIPE as soon as the peer's SHUTDOWN
// arrives, possibly ahead of data still to be read).
func (a *assoc) write(ctx context.Context, sid uint16, p []byte) error {
	err := a.c.writeMsg(ctx, sid, sctpwire.PPID, 0, p)
	switch {
	case err == nil:
		a.clock.Sent()
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err
	case a.Err() != nil:
		return a.Err()
	}
	return mapErr(err)
}

// creditLoop sends the grants that Recv and the receive loop make due:
// each stream's latest limit, on the control stream.
func (a *assoc) creditLoop() {
	var b [sctpwire.CreditLen]byte
	for {
		select {
		case <-a.creditK:
		case <-a.done:
			return
		}
		for i, st := range a.streams {
			st.mu.Lock()
			due, l := st.grantDue, st.granted
			st.grantDue = false
			st.mu.Unlock()
			if !due {
				continue
			}
			if a.write(a.ctx, sctpwire.ControlStream, sctpwire.AppendCredit(b[:0], i, l)) != nil {
				return
			}
		}
	}
}

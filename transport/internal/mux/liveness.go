package mux

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// Liveness. A TCP connection to a peer that was killed without a word,
// frozen (its kernel still acknowledges segments and keep-alive probes), or
// cut off by the network looks healthy for a long time, so the association
// keeps its own watch, link by link:
//
//   - A side that has written nothing on a link for Liveness/3 writes a
//     ping frame on it, if the link's writer is idle. A busy writer is
//     carrying traffic already, which is the better sign of life; so a busy
//     link carries no pings.
//   - A link's reader that has waited in Read for Liveness with nothing
//     arriving ends the association with a *transport.PeerLostError.
//
// Every link must show signs of life of its own, not only the association:
// a striped association hands each stream's blocks to its links in turn,
// so one silent link (a path that failed, a middlebox that forgot the
// connection) would hold its streams for ever while the others kept the
// association looking alive; and a link that carries no blocks now may
// be handed some later.
//
// Only a reader's wait in Read counts. A link's reader also waits for queue
// space while the local application leaves a stream's queue full, or for
// room to hold blocks that came ahead of their turn, and meanwhile reads
// nothing, pings included, for as long as that takes, which is no sign of
// a dead peer. The peer, whose writes on that link then block on TCP flow
// control, still gets our pings: they go out from a goroutine of their own
// on each link whose writer is idle, never from a receive goroutine.

// liveness is an association's keep-alive state.
type liveness struct {
	start time.Time      // the origin of the links' stamps
	stop  chan struct{}  // closed by finish: the keep-alive loop exits
	done  chan struct{}  // closed when the keep-alive loop has exited
	pings sync.WaitGroup // ping writes under way; only the loop adds
}

// linkClock is a link's record for the keep-alive loop, in readings of
// liveness.now.
type linkClock struct {
	reading atomic.Int64 // 1 + when the reader's pending Read began; 0 if none is
	sent    atomic.Int64 // when a frame was last written
}

// now is the time since the association started.
func (lv *liveness) now() time.Duration { return time.Since(lv.start) }

// pingFrame is the encoded ping; it is never written to.
var pingFrame = frame.Header{Type: frame.Ping}.Append(nil)

// startLiveness starts the keep-alive loop, unless Config.Liveness is zero.
func (a *Assoc) startLiveness() {
	lv := &a.lv
	lv.start = time.Now()
	lv.stop, lv.done = make(chan struct{}), make(chan struct{})
	if a.cfg.Liveness <= 0 {
		close(lv.done)
		return
	}
	go func() {
		defer close(lv.done)
		a.keepAlive()
	}()
}

// keepAlive looks at every link each sixth of the bound until the
// association fails or stop is closed: it ends the association for a link
// whose reader has heard nothing for the bound, and pings each link that
// has carried nothing for a third of it. A peer thus hears from every
// link at least every half bound, plus the path's delay.
func (a *Assoc) keepAlive() {
	bound := a.cfg.Liveness
	tick := time.NewTicker(bound / 6)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-a.lv.stop:
			return
		}
		now := a.lv.now()
		for i, l := range a.links {
			if r := l.clock.reading.Load(); r > 0 {
				if silence := now - time.Duration(r-1); silence >= bound {
					a.fail(a.lost(i, silence))
					return
				}
			}
			if now-time.Duration(l.clock.sent.Load()) >= bound/3 {
				a.ping(l)
			}
		}
	}
}

// lost is the error for link i's silence: the link is named when there
// are several.
func (a *Assoc) lost(i int, silence time.Duration) error {
	err := &transport.PeerLostError{Silence: silence, Liveness: a.cfg.Liveness}
	if len(a.links) == 1 {
		return err
	}
	return fmt.Errorf("connection %d of %d: %w", i+1, len(a.links), err)
}

// stopLiveness stops the keep-alive loop and waits for it and for its ping
// writes; the links must be closed already, so that no write is stuck.
func (a *Assoc) stopLiveness() {
	close(a.lv.stop)
	<-a.lv.done
	a.lv.pings.Wait()
}

// ping writes a ping frame on l, in a goroutine of its own, so that a full
// socket buffer never blocks the keep-alive loop. It never waits for a busy
// writer and sends nothing once closing has begun.
func (a *Assoc) ping(l *link) {
	if a.closeStarted.Load() || a.sendErr() != nil {
		return
	}
	select {
	case l.wsem <- struct{}{}:
	default:
		return // busy: its traffic is the sign of life
	}
	l.clock.sent.Store(int64(a.lv.now()))
	a.lv.pings.Go(func() {
		defer func() { <-l.wsem }()
		// An error here means the link is gone, which its reader
		// reports; a ping has nothing to add.
		_, _ = l.conn.Write(pingFrame)
	})
}

// stampConn is a link's connection as its reader sees it: it records when
// a Read is pending, the only wait of the reader that silence can explain.
type stampConn struct {
	net.Conn
	clock *linkClock
	lv    *liveness
}

func (c stampConn) Read(p []byte) (int, error) {
	c.clock.reading.Store(int64(c.lv.now()) + 1)
	n, err := c.Conn.Read(p)
	c.clock.reading.Store(0)
	return n, err
}

// push queues a message for stream s; it waits while the queue is full.
func (a *Assoc) push(s uint16, msg []byte) {
	a.queues[s].Push(msg, a.stop) // dropped once the association ends
}

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
//   - A side that has written nothing on a link for Liveness/2 writes a
//     ping frame on it, if the link's writer is idle. A busy writer is
//     carrying traffic already, which is the better sign of life; so a busy
//     link carries no pings.
//   - A link's reader that has waited in Read for Liveness with nothing
//     arriving ends the association with a *transport.PeerLostError.
//     With a peer older than that rule, which pings one idle link only
//     (Config.WatchEach false), it takes every link's reader waiting so.
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
//
// Closing. Pings go on, on every link, until its close frame has gone out
// (or the peer's has come): a Close first waits up to CloseTimeout for the
// messages under way, which may take longer than the bound while the
// peer's application is slow, and the peer must not take our idle links
// for dead meanwhile. A side that is closing checks for silence no more:
// CloseTimeout bounds its wait.

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

// keepAlive looks at the links whenever something is due, until the
// association fails or stop is closed: it ends the association for a link
// whose reader has heard nothing for the bound, and pings each link that
// has carried nothing for half of it. A peer thus hears from every link at
// least every half bound, plus the path's delay, which leaves the other
// half for a lost ping's TCP retransmissions (1.5 s at the default 3 s,
// several retransmission timeouts of a path under a second's round trip).
//
// It sleeps until the next ping or the first silence could be due, not a
// fixed tick: an idle association costs its side one wakeup and one ping
// a link per half bound. Each is a system call or two on both ends, which
// with 10,000 idle workers was most of the server's idle CPU: the loop
// that ticked every eighth of the bound and pinged links quiet for a
// quarter (every three ticks, in practice) cost 28.7 % of a core, this one
// 21.5 % (docs/scale.md).
func (a *Assoc) keepAlive() {
	bound := a.cfg.Liveness
	t := time.NewTimer(pingAfter(bound))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-a.lv.stop:
			return
		}
		now := a.lv.now()
		i, silence := a.silence(now)
		if silence >= bound && !a.closeStarted.Load() {
			err := a.lost(i, silence)
			// The peer may still hear us on the other links: say why.
			a.tryAbortFrames(err.Error())
			a.fail(err)
			return
		}
		t.Reset(a.pingIdle(now, bound, silence))
	}
}

// pingAfter is how long a link may carry nothing before it is pinged.
func pingAfter(bound time.Duration) time.Duration { return bound / 2 }

// pingIdle pings the links that have carried nothing for pingAfter, and
// returns how long the keep-alive loop may sleep: until the next ping is
// due, or the silence (as silence reported it) could reach the bound,
// since it grows no faster than the clock. A link whose writer is busy,
// which got no ping, is looked at again an eighth of the bound later.
func (a *Assoc) pingIdle(now, bound, silence time.Duration) time.Duration {
	every := pingAfter(bound)
	next := every
	if !a.closeStarted.Load() { // a closing side checks for silence no more
		next = max(bound-silence, time.Millisecond)
	}
	for _, l := range a.links {
		due := every - (now - time.Duration(l.clock.sent.Load()))
		if due <= 0 {
			due = every
			if !a.ping(l) {
				due = bound / 8
			}
		}
		next = min(next, due)
	}
	return next
}

// silence is how long link i's reader has waited in Read, for the link
// that has waited longest; or, without Config.WatchEach, for the link that
// has waited least (0 if one's reader is elsewhere), with i -1. Links that
// have ended, whose readers are gone, do not count.
func (a *Assoc) silence(now time.Duration) (i int, silence time.Duration) {
	least := time.Duration(-1)
	for k, l := range a.links {
		if l.ended.Load() {
			continue
		}
		var s time.Duration
		if r := l.clock.reading.Load(); r > 0 {
			s = now - time.Duration(r-1)
		}
		if s > silence {
			i, silence = k, s
		}
		if least < 0 || s < least {
			least = s
		}
	}
	if !a.cfg.WatchEach {
		return -1, max(least, 0)
	}
	return i, silence
}

// lost is the error for link i's silence (the association's, for -1): the
// link is named when there are several.
func (a *Assoc) lost(i int, silence time.Duration) error {
	err := &transport.PeerLostError{Silence: silence, Liveness: a.cfg.Liveness}
	if len(a.links) == 1 || i < 0 {
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
// writer, and sends nothing once l has ended (a close frame went out or
// came in). On a failed or aborted association, whose links are closed,
// the write fails at once. It reports whether it wrote.
func (a *Assoc) ping(l *link) bool {
	select {
	case l.wsem <- struct{}{}:
	default:
		return false // busy: its traffic is the sign of life
	}
	if l.ended.Load() {
		<-l.wsem
		return false
	}
	l.clock.sent.Store(int64(a.lv.now()))
	a.lv.pings.Go(func() {
		defer func() { <-l.wsem }()
		// An error here means the link is gone, which its reader
		// reports; a ping has nothing to add.
		_, _ = l.conn.Write(pingFrame)
	})
	return true
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

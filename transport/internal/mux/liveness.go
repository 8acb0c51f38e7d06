package mux

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/braidhq/braid/transport/internal/frame"
)

// Liveness. A TCP connection to a peer that was killed without a word,
// frozen (its kernel still acknowledges segments and keep-alive probes), or
// cut off by the network looks healthy for a long time, so the association
// keeps its own clock (transport/internal/alive):
//
//   - Every byte read on any link is a sign of life.
//   - A side that has written nothing on any link for Liveness/3 writes a
//     ping frame on a link whose writer is idle. A link whose writer is busy
//     is carrying traffic already, which is the better sign of life; so a
//     busy association sends no pings.
//   - A side that has read nothing for Liveness ends the association with a
//     *transport.PeerLostError.
//
// One trap: a link's receive goroutine blocks while the local application
// leaves a stream's queue full, and then reads nothing, pings included, for
// as long as the application takes. That is no sign of a dead peer, so the
// silence clock is suspended while any receive goroutine waits for queue
// space and restarts when it resumes. The peer, whose writes that stall then
// block on TCP flow control, still gets our pings: they go out on a link
// whose writer is idle, from a goroutine of their own, never from a
// receive goroutine; and its receive goroutines are not blocked.

// liveness is an association's keep-alive state.
type liveness struct {
	clock   alive.Clock
	stalled atomic.Int32 // receive goroutines waiting for queue space

	stop  chan struct{}  // closed by finish: the keep-alive loop exits
	done  chan struct{}  // closed when the keep-alive loop has exited
	pings sync.WaitGroup // ping writes under way; only the loop adds
}

// pingFrame is the encoded ping; it is never written to.
var pingFrame = frame.Header{Type: frame.Ping}.Append(nil)

// startLiveness starts the keep-alive loop, unless Config.Liveness is zero.
func (a *Assoc) startLiveness() {
	lv := &a.lv
	lv.clock.Start()
	lv.stop, lv.done = make(chan struct{}), make(chan struct{})
	if a.cfg.Liveness <= 0 {
		close(lv.done)
		return
	}
	loop := &alive.Loop{
		Bound:   a.cfg.Liveness,
		Clock:   &lv.clock,
		Ping:    a.ping,
		Stalled: func() bool { return lv.stalled.Load() > 0 },
		Lost:    func(e *transport.PeerLostError) { a.fail(e) },
	}
	go func() {
		defer close(lv.done)
		loop.Run(lv.stop)
	}()
}

// stopLiveness stops the keep-alive loop and waits for it and for its ping
// writes; the links must be closed already, so that no write is stuck.
func (a *Assoc) stopLiveness() {
	close(a.lv.stop)
	<-a.lv.done
	a.lv.pings.Wait()
}

// ping writes a ping frame on the first link whose writer is idle, in a
// goroutine of its own, so that a full socket buffer never blocks the
// keep-alive loop. It never waits for a busy link and sends nothing once
// closing has begun.
func (a *Assoc) ping() {
	if a.closeStarted.Load() || a.sendErr() != nil {
		return
	}
	for _, l := range a.links {
		select {
		case l.wsem <- struct{}{}:
		default:
			continue // busy: its traffic is the sign of life
		}
		a.lv.clock.Sent()
		a.lv.pings.Go(func() {
			defer func() { <-l.wsem }()
			// An error here means the link is gone, which its reader
			// reports; a ping has nothing to add.
			_, _ = l.conn.Write(pingFrame)
		})
		return
	}
}

// stampConn is a link's connection as its reader sees it: every read that
// returns bytes is a sign of life.
type stampConn struct {
	net.Conn
	clock *alive.Clock
}

func (c stampConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.clock.Heard()
	}
	return n, err
}

// push queues a message for stream s. While the queue is full the silence
// clock is suspended (see the top of this file).
func (a *Assoc) push(s uint16, msg []byte) {
	a.lv.stalled.Add(1)
	a.queues[s].Push(msg, a.stop) // dropped once the association ends
	a.lv.clock.Heard()            // before no longer counting as stalled
	a.lv.stalled.Add(-1)
}

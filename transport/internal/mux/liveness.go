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
//   - A side that has written nothing on a link for Liveness/2 (or
//     IdleLiveness/2 once it announced idle: Idle links, below) writes a
//     ping frame on it, if the link's writer is idle. A busy writer is
//     carrying traffic already, which is the better sign of life; so a
//     busy link carries no pings.
//   - A link's reader that has waited in Read for Liveness (or, after an
//     idle ping, for the bound Idle links says) with nothing arriving
//     ends the association with a *transport.PeerLostError.
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
// Idle links. An association whose peer offered idle pings too
// (Config.IdleLiveness, from the handshake) watches a quiet link with a
// longer bound, since a link with nothing under way has nothing to lose
// quickly; a link that carries messages keeps the liveness bound:
//
//   - A side whose link has carried no Data or Block frame either way for
//     Liveness, whose reader waits in Read, and whose application holds
//     no Busy, marks its next ping on the link idle (frame.FlagIdle) and
//     then pings it every IdleLiveness/2 instead of every Liveness/2.
//   - A reader whose last frame was an idle ping waits IdleLiveness, not
//     Liveness, for the next sign of life; any other frame returns the
//     link to the liveness bound. So both sides agree which bound
//     applies: the one the last frame on the link announced.
//   - Leaving idle: a side that writes or reads a Data or Block frame on
//     an idle link, or whose application takes a Busy, pings on the
//     liveness schedule again at once (a read or a Busy: a ping at once,
//     even if its idle ping went out a moment before, so that the peer
//     leaves the idle bound; a write: the frame is the sign of life).
//   - Sending to an idle peer: a Data or Block frame written since the
//     peer's last frame arrived, or less than Liveness before, is answered
//     by a peer that leaves idle when it reads it; so, besides the idle
//     bound, the link is lost if nothing arrives within Liveness of that
//     write. That covers the peer that went idle just as we wrote (its
//     idle ping crossed our frame: it was written less than Liveness
//     before the ping arrived, as the peer had read nothing from us for
//     Liveness when it wrote it) and the peer frozen or killed before it
//     read what we sent.
//
// A peer frozen or cut off while idle is thus noticed within IdleLiveness
// (plus the keep-alive's wakeup), and within Liveness once we send it
// anything; while messages go either way, within Liveness as before.
//
// Closing. Pings go on, on every link, until its close frame has gone out
// (or the peer's has come): a Close first waits up to CloseTimeout for the
// messages under way, which may take longer than the bound while the
// peer's application is slow, and the peer must not take our idle links
// for dead meanwhile. A side that is closing checks for silence no more
// (CloseTimeout bounds its wait) and announces no idle.

// IdleOffer is the idle factor a transport offers in the handshake for its
// configured one: transport.DefaultIdleFactor for zero, none (0) for a
// negative value.
func IdleOffer(configured int) int {
	switch {
	case configured == 0:
		return transport.DefaultIdleFactor
	case configured < 0:
		return 0
	}
	return configured
}

// liveness is an association's keep-alive state.
type liveness struct {
	start time.Time      // the origin of the links' stamps
	stop  chan struct{}  // closed by finish: the keep-alive loop exits
	done  chan struct{}  // closed when the keep-alive loop has exited
	poke  chan struct{}  // cap 1: the loop looks again now (lookAgain)
	pings sync.WaitGroup // ping writes under way; only the loop adds
	busy  atomic.Int64   // Busy holds not yet released
}

// linkClock is a link's record for the keep-alive loop, in readings of
// liveness.now; a stamp is a reading plus one, 0 for never.
type linkClock struct {
	reading atomic.Int64 // stamp: when the reader's pending Read began; 0 if none is
	sent    atomic.Int64 // when a frame was last written
	dataOut atomic.Int64 // stamp: when a Data or Block frame's write last began or ended
	dataIn  atomic.Int64 // stamp: when a Data or Block frame last arrived
	// peerIdle is set while the last frame read was an idle ping.
	peerIdle atomic.Bool
	// idleOut is set while our last frame on the link was an idle ping (or
	// one is being decided): whoever clears it wakes the loop.
	idleOut atomic.Bool
}

// now is the time since the association started.
func (lv *liveness) now() time.Duration { return time.Since(lv.start) }

// stamp is now as a stamp.
func (lv *liveness) stamp() int64 { return int64(lv.now()) + 1 }

// pingFrame and idlePingFrame are the encoded pings; they are never
// written to.
var (
	pingFrame     = frame.Header{Type: frame.Ping}.Append(nil)
	idlePingFrame = frame.Header{Type: frame.Ping, Flags: frame.FlagIdle}.Append(nil)
)

// startLiveness starts the keep-alive loop, unless Config.Liveness is zero.
func (a *Assoc) startLiveness() {
	lv := &a.lv
	lv.start = time.Now()
	lv.stop, lv.done = make(chan struct{}), make(chan struct{})
	lv.poke = make(chan struct{}, 1)
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
// whose reader has heard nothing for the bound that applies (see overdue),
// and pings each link that has carried nothing for half its ping period
// (the liveness bound, or the idle bound once the link announced idle). A
// peer thus hears from every link at least every half bound, plus the
// path's delay, which leaves the other half for a lost ping's TCP
// retransmissions (1.5 s at the default 3 s, several retransmission
// timeouts of a path under a second's round trip).
//
// It sleeps until the next ping or the first loss could be due, not a
// fixed tick, or until a link leaves idle (poke). An association whose
// links are idle costs its side one wakeup and one ping a link per half
// idle bound: with 10,000 idle workers the pings were most of the
// server's idle CPU at one a half liveness bound each way (docs/scale.md).
func (a *Assoc) keepAlive() {
	t := time.NewTimer(pingAfter(a.cfg.Liveness))
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-a.lv.poke:
		case <-a.lv.stop:
			return
		}
		now := a.lv.now()
		i, silence, bound, left := a.overdue(now)
		if left <= 0 && !a.closeStarted.Load() {
			// The peer may still hear us on the other links: say why.
			a.failAndTell(a.lost(i, silence, bound))
			return
		}
		t.Reset(a.pingIdle(now, left))
	}
}

// pingAfter is how long a link may carry nothing before it is pinged, for
// a bound (the liveness bound, or the idle bound on an idle link).
func pingAfter(bound time.Duration) time.Duration { return bound / 2 }

// pingIdle pings the links that have carried nothing for their ping
// period, and returns how long the keep-alive loop may sleep: until the
// next ping is due, or the first loss could be (left, as overdue reported
// it: silence grows no faster than the clock). A link whose writer is
// busy, which got no ping, is looked at again an eighth of the liveness
// bound later.
func (a *Assoc) pingIdle(now, left time.Duration) time.Duration {
	next := pingAfter(max(a.cfg.IdleLiveness, a.cfg.Liveness))
	if !a.closeStarted.Load() { // a closing side checks for silence no more
		next = max(left, time.Millisecond)
	}
	for _, l := range a.links {
		every := a.pingPeriod(l)
		due := every - (now - time.Duration(l.clock.sent.Load()))
		if due <= 0 {
			if !a.ping(l, now) {
				due = a.cfg.Liveness / 8
			} else {
				due = a.pingPeriod(l)
			}
		}
		next = min(next, due)
	}
	return next
}

// pingPeriod is how long l may carry nothing before it is pinged: half the
// idle bound once it announced idle, half the liveness bound otherwise.
func (a *Assoc) pingPeriod(l *link) time.Duration {
	if l.clock.idleOut.Load() {
		return pingAfter(a.cfg.IdleLiveness)
	}
	return pingAfter(a.cfg.Liveness)
}

// overdue finds the link closest to being lost: its index, how long its
// reader has waited in Read, the bound that applies to it, and how long
// is left before it is lost (0 or less: lost). Without Config.WatchEach
// it judges the link that has waited least against the liveness bound
// instead, with i -1. Links that have ended, whose readers are gone, do
// not count, nor do links whose reader is not in Read, but for left: it
// is at most the liveness bound while there is one, whose wait in Read
// may begin any time.
func (a *Assoc) overdue(now time.Duration) (i int, silence, bound, left time.Duration) {
	if !a.cfg.WatchEach {
		silence = a.leastSilence(now)
		return -1, silence, a.cfg.Liveness, a.cfg.Liveness - silence
	}
	left = max(a.cfg.IdleLiveness, a.cfg.Liveness)
	for k, l := range a.links {
		if l.ended.Load() {
			continue
		}
		r := l.clock.reading.Load()
		if r == 0 { // its wait may begin any time: look again a bound later
			left = min(left, a.cfg.Liveness)
			continue
		}
		s := now - time.Duration(r-1)
		b, lk := a.linkBound(l, now, time.Duration(r-1), s)
		if lk < left {
			i, silence, bound, left = k, s, b, lk
		}
	}
	if bound == 0 { // no link counted: the next look is a bound away
		bound = a.cfg.Liveness
	}
	return i, silence, bound, left
}

// linkBound is the bound that applies to l, whose reader began its pending
// Read at rs and has waited s, and how long is left before it is lost: the
// liveness bound, unless the peer's last frame was an idle ping; then the
// idle bound, but the liveness bound from a Data or Block frame we wrote
// since, or less than Liveness before the idle ping arrived (see Idle
// links).
func (a *Assoc) linkBound(l *link, now, rs, s time.Duration) (bound, left time.Duration) {
	live := a.cfg.Liveness
	if !l.clock.peerIdle.Load() {
		return live, live - s
	}
	bound, left = a.cfg.IdleLiveness, a.cfg.IdleLiveness-s
	if d := l.clock.dataOut.Load(); d > 0 {
		if ds := time.Duration(d - 1); ds > rs-live && live-(now-ds) < left {
			return live, live - (now - ds)
		}
	}
	return bound, left
}

// leastSilence is how long the link whose reader has waited least in Read
// has waited (0 if one's reader is elsewhere); links that have ended do
// not count.
func (a *Assoc) leastSilence(now time.Duration) time.Duration {
	least := time.Duration(-1)
	for _, l := range a.links {
		if l.ended.Load() {
			continue
		}
		var s time.Duration
		if r := l.clock.reading.Load(); r > 0 {
			s = now - time.Duration(r-1)
		}
		if least < 0 || s < least {
			least = s
		}
	}
	return max(least, 0)
}

// lost is the error for link i's silence under bound (the association's,
// for -1): the link is named when there are several.
func (a *Assoc) lost(i int, silence, bound time.Duration) error {
	err := &transport.PeerLostError{Silence: silence, Liveness: bound}
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
// socket buffer never blocks the keep-alive loop: an idle ping if goIdle
// says l may go idle. It never waits for a busy writer, and sends nothing
// once l has ended (a close frame went out or came in). On a failed or
// aborted association, whose links are closed, the write fails at once.
// It reports whether it wrote.
func (a *Assoc) ping(l *link, now time.Duration) bool {
	select {
	case l.wsem <- struct{}{}:
	default:
		return false // busy: its traffic is the sign of life
	}
	if l.ended.Load() {
		<-l.wsem
		return false
	}
	f := pingFrame
	if a.goIdle(l, now) {
		f = idlePingFrame
	}
	l.clock.sent.Store(int64(now))
	a.lv.pings.Go(func() {
		defer func() { <-l.wsem }()
		// An error here means the link is gone, which its reader
		// reports; a ping has nothing to add.
		_, _ = l.conn.Write(f)
	})
	return true
}

// goIdle reports whether l may announce idle in the ping about to be
// written (its writer held): idle bounds were negotiated, the association
// is not closing and holds no Busy, l's reader waits in Read, and no Data
// or Block frame went either way for the liveness bound. It sets
// l.clock.idleOut before it looks, and clears it unless it says yes, so
// that a frame read or a Busy taken meanwhile, which clears it after it
// stamps itself, either is seen here or wakes the loop.
func (a *Assoc) goIdle(l *link, now time.Duration) bool {
	if a.cfg.IdleLiveness <= 0 {
		return false
	}
	l.clock.idleOut.Store(true)
	c := &l.clock
	quiet := now - time.Duration(max(c.dataOut.Load(), c.dataIn.Load(), 1)-1)
	if quiet >= a.cfg.Liveness && c.reading.Load() != 0 && a.lv.busy.Load() == 0 && !a.closeStarted.Load() {
		return true
	}
	c.idleOut.Store(false)
	return false
}

// leaveIdle returns l to the liveness schedule if it announced idle, and
// wakes the keep-alive loop to reschedule; with pingNow, the loop pings l
// at once (its last frame, the idle ping, told the peer to wait the idle
// bound). The caller stamped what made it leave first (see goIdle).
func (a *Assoc) leaveIdle(l *link, pingNow bool) {
	if l.clock.idleOut.CompareAndSwap(true, false) {
		if pingNow {
			l.clock.sent.Store(0)
		}
		a.lookAgain()
	}
}

// dataRead records a Data or Block frame read on l.
func (a *Assoc) dataRead(l *link) {
	l.clock.dataIn.Store(a.lv.stamp())
	a.leaveIdle(l, true)
}

// dataWritten records a Data or Block frame's write on l at now, as it
// begins and as it ends; the caller holds l's writer. The loop looks at
// the link within the liveness bound of the write (at its next ping, half
// the bound later at most, or at once if l was idle), so a write to an
// idle peer is judged by linkBound in time.
func (a *Assoc) dataWritten(l *link, now time.Duration) {
	l.clock.dataOut.Store(int64(now) + 1)
	a.leaveIdle(l, false)
}

// lookAgain has the keep-alive loop look at the links again now.
func (a *Assoc) lookAgain() {
	select {
	case a.lv.poke <- struct{}{}:
	default:
	}
}

// Busy holds the association on the liveness schedule until release is
// called: no link announces idle meanwhile, and an idle one leaves idle at
// once (transport.Busier). Release may be called more than once.
func (a *Assoc) Busy() (release func()) {
	a.lv.busy.Add(1)
	for _, l := range a.links {
		a.leaveIdle(l, true)
	}
	var once sync.Once
	return func() { once.Do(func() { a.lv.busy.Add(-1) }) }
}

// SilenceBounds reports the bounds the keep-alive loop holds the peer to
// (transport.Watched): the idle bound, if one was negotiated, for a quiet
// peer, and the liveness bound once we sent it anything; none without a
// liveness bound.
func (a *Assoc) SilenceBounds() (quiet, sent time.Duration) {
	if a.cfg.Liveness <= 0 {
		return 0, 0
	}
	return max(a.cfg.Liveness, a.cfg.IdleLiveness), a.cfg.Liveness
}

// stampConn is a link's connection as its reader sees it: it records when
// a Read is pending, the only wait of the reader that silence can explain.
type stampConn struct {
	net.Conn
	clock *linkClock
	lv    *liveness
}

func (c stampConn) Read(p []byte) (int, error) {
	c.clock.reading.Store(c.lv.stamp())
	n, err := c.Conn.Read(p)
	c.clock.reading.Store(0)
	return n, err
}

// push queues a message for stream s; it waits while the queue is full.
func (a *Assoc) push(s uint16, msg []byte) {
	a.queues[s].Push(msg, a.stop) // dropped once the association ends
}

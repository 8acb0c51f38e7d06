package sctp

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pion/sctp"
)

// The send scheduler. pion/sctp's WriteSCTP never blocks: it queues the
// message in the association and returns. On their own the streams' senders
// would hand pion a whole credit window each, which then waits in pion's
// queue and on the path (socket buffers, the peer's read loop) ahead of any
// later message, so that a small message on one stream waits behind
// megabytes of another's. (pion's own queue interleaves streams, RFC 8260,
// but everything it has sent is already queued on the path.) Every data
// fragment therefore passes through the association's scheduler, which
// hands pion a fragment only while the bytes pion holds for the data
// streams (queued or in flight, not yet acknowledged) stay under a limit.
// Send blocks meanwhile, where ctx, Close and Abort reach it.
//
// Order. Of the streams waiting for room, the one whose message has the
// fewest bytes left to send goes first (shortest remaining first), the
// longest waiting among equals. A small message thus passes bulk, and of
// several large ones the first begun is sent whole before the next: each
// reaches its receiver, who can start on it, as early as the path allows,
// where turns of one fragment each would finish them all together at the
// end. A job's units are such messages: jobs of 16 units of 1 MiB ran up
// to about a tenth faster than with turns through emulated links
// (docs/experiments/net-order). So that no message waits for ever behind a run of shorter
// ones, the stream that has waited longest is given a fragment whatever its
// message's length once it has waited maxPassed, but only one such fragment
// per maxPassed (else, with many streams or on a slow path, all would have
// waited that long and the order would be turns again).
//
// A stream that was just granted a fragment of a message it has not
// finished is not waiting in that instant but is about to again, so the
// room it would take is kept for it while its message is the shortest: it
// is "coming" until it waits again, finishes its message, or steps away to
// wait for credit, which may take long (an unread stream must not hold up
// the others).
//
// The limit is sized from the path: a floor of two fragments, plus the
// bandwidth-delay product, estimated as the delivery rate (the largest of the
// last eight samples, each at least 10 ms) times the larger of twice the
// smallest smoothed RTT pion has reported and queueTarget, but no more than
// pion's congestion window, so that pion is rarely short of data to send and
// never holds much more than it may have in flight. A small message thus
// waits behind about one bandwidth-delay product of bulk data, not a credit
// window. The smallest RTT, not the current one, because the queues the
// limit lets build up inflate the current one; queueTarget because on a short
// path the senders' wakeups on a busy machine, not the path, set the pace.
// The limit trades latency for CPU: pion spends less per byte with deeper
// queues (on loopback, CPU per byte at a fixed 256 KiB limit was about 1.4
// times that at 4 MiB).
//
// The control stream (handshake, credit grants) bypasses the scheduler, as
// do abandon fragments (13 bytes, at most one per message).
//
// Wakeups. pion reports acknowledged bytes per stream through a callback
// that fires when a stream's buffered amount falls to its threshold. When
// streams wait, the scheduler wants a drop of D bytes (what the first
// waiter needs, but at least a quarter of the limit, so that wakeups stay
// few per byte) across the k streams that hold data in pion; it sets each
// one's threshold ceil(D/k) below its current amount, so that a drop of D
// fires at least one callback. No timer is involved.

// scheduler serves an association's data streams in turn.
type scheduler struct {
	streams []*sctp.Stream // the data streams, by logical index
	floor   int            // the smallest limit
	pa      *sctp.Association

	mu       sync.Mutex // guards everything below; taken before pion's locks
	waiters  []waiter   // one per stream (a stream sends one fragment at a time)
	queue    []*waiter  // streams waiting for room, the longest waiting first
	coming   []int      // per stream: bytes its message has left to send, while it is coming
	reserved int        // bytes granted but not yet written to pion
	active   []int      // streams that may hold bytes in pion
	inActive []bool
	granted  int64     // bytes granted so far
	lastAged time.Time // when a stream was last served for having waited maxPassed
	limit    int
	est      bdpEstimator
	// modelCwnd: pion's controller bounds cwnd by its own model of the
	// path (cubic's curve, bbr's bandwidth-delay product), so the limit
	// follows cwnd (updateLocked).
	modelCwnd bool
}

// waiter is a stream's pending request for room.
type waiter struct {
	s      int       // the stream
	n      int       // the fragment's bytes
	left   int       // its message's payload bytes not yet sent, the fragment's included
	since  time.Time // when it began to wait
	queued bool
	ready  chan struct{} // receives the grant
}

// maxPassed is how long a stream waits while shorter messages pass it
// before it is given a fragment, and how often that may happen.
const maxPassed = 100 * time.Millisecond

func newScheduler(pa *sctp.Association, streams []*sctp.Stream, fragSize int) *scheduler {
	floor := max(2*(fragSize+fragHeaderLen), 64<<10)
	q := &scheduler{
		streams: streams, floor: floor, pa: pa, limit: floor, modelCwnd: pa.CongestionControl() != CCReno,
		waiters: make([]waiter, len(streams)), inActive: make([]bool, len(streams)),
		coming: make([]int, len(streams)),
	}
	for i := range q.waiters {
		q.waiters[i].s = i
		q.waiters[i].ready = make(chan struct{}, 1)
	}
	for _, st := range streams {
		st.OnBufferedAmountLow(q.kick)
	}
	return q
}

// wait returns once stream s may hand pion n bytes, a fragment of a message
// with left bytes of payload still to send, the fragment's included; the
// caller then writes them and calls written. It fails when ctx or the
// association ends first.
func (q *scheduler) wait(ctx context.Context, done <-chan struct{}, s, n, left int) error {
	q.mu.Lock()
	q.coming[s] = 0
	w := &q.waiters[s]
	w.n, w.left = n, left
	if len(q.queue) == 0 && !q.heldLocked(left) && q.roomLocked(n) {
		q.grantLocked(w)
		q.mu.Unlock()
		return nil
	}
	w.since, w.queued = time.Now(), true
	q.queue = append(q.queue, w)
	q.dispatchLocked()
	q.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		q.cancel(w)
		return ctx.Err()
	case <-done:
		q.cancel(w)
		return errEnded
	}
}

// cancel withdraws w's request, or gives back its grant.
func (q *scheduler) cancel(w *waiter) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if w.queued {
		for i, x := range q.queue {
			if x == w {
				q.queue = append(q.queue[:i], q.queue[i+1:]...)
				break
			}
		}
		w.queued = false
	} else {
		<-w.ready
		q.reserved -= w.n
		q.granted -= int64(w.n)
		q.coming[w.s] = 0
	}
	q.dispatchLocked()
}

// away records that stream s is not coming back for room soon: its
// message is sent, or it waits for credit, or it failed.
func (q *scheduler) away(s int) {
	q.mu.Lock()
	if q.coming[s] > 0 {
		q.coming[s] = 0
		q.dispatchLocked()
	}
	q.mu.Unlock()
}

// written records that stream s handed pion the n bytes it was granted.
func (q *scheduler) written(s, n int) {
	q.mu.Lock()
	q.reserved -= n
	if !q.inActive[s] {
		q.inActive[s] = true
		q.active = append(q.active, s)
	}
	if len(q.queue) > 0 {
		q.dispatchLocked()
	}
	q.mu.Unlock()
}

// kick is pion's callback when a stream's buffered amount has fallen.
func (q *scheduler) kick() {
	q.mu.Lock()
	q.dispatchLocked()
	q.mu.Unlock()
}

// grantLocked reserves w's room; a queued waiter is then told on w.ready.
func (q *scheduler) grantLocked(w *waiter) {
	w.queued = false
	q.reserved += w.n
	q.granted += int64(w.n)
	if rest := w.left - (w.n - fragHeaderLen); rest > 0 {
		q.coming[w.s] = rest
	}
}

// dispatchLocked grants room to waiting streams, the next first, and arms
// pion's callbacks when some must still wait.
func (q *scheduler) dispatchLocked() {
	now := time.Now()
	for {
		i := -1
		for len(q.queue) > 0 {
			var aged bool
			if i, aged = q.nextLocked(now); i < 0 {
				return // a coming stream goes first; its wait dispatches
			}
			if !q.roomLocked(q.queue[i].n) {
				break
			}
			if aged {
				q.lastAged = now
			}
			w := q.queue[i]
			q.queue = slices.Delete(q.queue, i, i+1)
			q.grantLocked(w)
			w.ready <- struct{}{}
		}
		if len(q.queue) == 0 || q.armLocked(q.queue[i].n) {
			return
		}
	}
}

// nextLocked returns the index in the queue of the stream to serve next at
// now, and whether it is served for having waited: the longest waiting if it
// has waited maxPassed and none was so served in the last maxPassed, else
// the one with the fewest bytes left (the longest waiting among those); or
// -1 if a coming stream has fewer left than all that wait.
func (q *scheduler) nextLocked(now time.Time) (int, bool) {
	if now.Sub(q.queue[0].since) >= maxPassed && now.Sub(q.lastAged) >= maxPassed {
		return 0, true
	}
	best := 0
	for i, w := range q.queue[1:] {
		if w.left < q.queue[best].left {
			best = i + 1
		}
	}
	if q.heldLocked(q.queue[best].left) {
		return -1, false
	}
	return best, false
}

// heldLocked reports whether a coming stream's message has fewer than left
// bytes to send.
func (q *scheduler) heldLocked(left int) bool {
	for _, c := range q.coming {
		if c > 0 && c < left {
			return true
		}
	}
	return false
}

// roomLocked reports whether n more bytes fit under the limit.
func (q *scheduler) roomLocked(n int) bool {
	used := q.bufferedLocked() + q.reserved
	q.updateLocked(used)
	return used == 0 || used+n <= q.limit
}

// bufferedLocked sums the data streams' bytes in pion, and forgets streams
// that hold none.
func (q *scheduler) bufferedLocked() int {
	b := 0
	for i := 0; i < len(q.active); {
		s := q.active[i]
		n := int(q.streams[s].BufferedAmount())
		if n == 0 {
			q.inActive[s] = false
			q.active[i] = q.active[len(q.active)-1]
			q.active = q.active[:len(q.active)-1]
			continue
		}
		b += n
		i++
	}
	return b
}

// armLocked sets pion's thresholds so that a callback fires once need more
// bytes fit. It returns false if room may have appeared meanwhile.
func (q *scheduler) armLocked(need int) bool {
	var own [16]int
	amounts := own[:0]
	b := 0
	for _, s := range q.active {
		n := int(q.streams[s].BufferedAmount())
		amounts = append(amounts, n)
		b += n
	}
	d := b + q.reserved + need - q.limit
	switch {
	case b == 0 && q.reserved > 0:
		return true // written will dispatch
	case d <= 0 || b == 0:
		return false
	}
	d = min(max(d, q.limit/wakeFraction), b)
	k := 0
	for _, n := range amounts {
		if n > 0 {
			k++
		}
	}
	step := (d + k - 1) / k
	for i, s := range q.active {
		if amounts[i] == 0 {
			amounts[i] = -1 // nothing to wait for on this stream
			continue
		}
		amounts[i] = max(amounts[i]-step, 0)
		q.streams[s].SetBufferedAmountLowThreshold(uint64(amounts[i]))
	}
	for i, s := range q.active {
		if amounts[i] >= 0 && int(q.streams[s].BufferedAmount()) <= amounts[i] {
			return false // it fell before its threshold was set
		}
	}
	return true
}

// wakeFraction sets the least drop that wakes waiting streams: a quarter of
// the limit, so that a woken sender finds room for more than one fragment
// and wakeups stay few per byte.
const wakeFraction = 4

// updateLocked feeds the estimator and resizes the limit.
func (q *scheduler) updateLocked(used int) {
	now := time.Now()
	if !q.est.due(now) {
		return
	}
	bdp := q.est.sample(now, q.granted-int64(used), q.pa.SRTT())
	q.limit = limitFor(q.floor, bdp, int(q.pa.CWND()), q.modelCwnd)
}

// limitFor is the scheduler's limit: floor plus the bandwidth-delay
// product, at most cwnd. With a controller that bounds cwnd by its model
// (modelCwnd), floor plus a third more than cwnd whatever the product: the
// room beyond cwnd is what drains before the waiters wake (a quarter of
// the limit), so that pion's queue does not run dry with room in cwnd,
// which bbr reads as the sender having no more to send (it discounts what
// it measures then).
func limitFor(floor, bdp, cwnd int, modelCwnd bool) int {
	if modelCwnd {
		return floor + min(cwnd*4/3, maxLimit)
	}
	return floor + min(bdp, cwnd, maxLimit)
}

// maxLimit caps the limit above its floor.
const maxLimit = 32 << 20

// bdpEstimator estimates the bandwidth-delay product from the delivery rate
// (the largest of the last few samples) and the smallest smoothed RTT seen.
type bdpEstimator struct {
	at        time.Time
	delivered int64
	rates     [8]float64 // bytes per second, a ring
	next      int
	minRTT    float64 // seconds, 0 until measured
}

// queueTarget is the least time's worth of data the limit allows above its
// floor, however short the path (see the comment at the top). On loopback
// (`braid bench transport --mode bulk,hol`, one run each) 1 ms gave 2.9–3.1
// Gbit/s with 4 streams and a small-message p99 of 3.6–3.9 ms beside bulk;
// 2 ms 3.8–4.0 Gbit/s and 6.2–6.8 ms; 4 ms 4.1 Gbit/s and 10–11 ms.
const queueTarget = 2 * time.Millisecond

// sampleEvery is the shortest interval between two rate samples.
const sampleEvery = 10 * time.Millisecond

func (e *bdpEstimator) due(now time.Time) bool {
	return now.Sub(e.at) >= max(sampleEvery, time.Duration(e.minRTT*float64(time.Second)))
}

// sample records delivered bytes (a running total) at now and pion's
// smoothed RTT in milliseconds, and returns the estimate in bytes.
func (e *bdpEstimator) sample(now time.Time, delivered int64, srttMS float64) int {
	if !e.at.IsZero() {
		e.rates[e.next] = float64(max(delivered-e.delivered, 0)) / now.Sub(e.at).Seconds()
		e.next = (e.next + 1) % len(e.rates)
	}
	e.at, e.delivered = now, delivered
	if rtt := srttMS / 1000; rtt > 0 && (e.minRTT == 0 || rtt < e.minRTT) {
		e.minRTT = rtt
	}
	var rate float64
	for _, r := range e.rates {
		rate = max(rate, r)
	}
	return int(rate * max(2*e.minRTT, queueTarget.Seconds()))
}

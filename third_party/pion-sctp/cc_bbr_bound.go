// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import "time"

// bbrBound is bbr-cubic's answer to a bottleneck it shares with
// loss-based flows; a nil bound (plain bbr) is none. BBRv1 reads no loss
// as congestion: beside a CUBIC flow, in a queue of one bandwidth-delay
// product, it keeps two of them in flight while CUBIC fills the queue and
// backs off at each overflow, and so it takes nine tenths of the link (as
// Linux's bbr does).
//
// The bound tells the two kinds of loss apart by the queue, as TCP Veno
// does (Fu and Liew, 2003): a loss while a queue stands, the smallest RTT
// of the last round trip and of this one above the path's base RTT (the
// smallest ever seen) by a quarter of it and at least 4 ms, is congestion;
// a loss at an empty queue is the link's and changes nothing. The first
// congestive loss in ProbeBW sets a bound on cwnd, of the kind BBRv3's
// inflight_hi is, that moves as a CUBIC window would: 0.7 of the flight
// at each congestive loss (once a Fast Recovery), along CUBIC's curve in
// between. A bottleneck's tail drops may fall on the loss-based flows
// alone (this one is paced), so the queue counts as well: in ProbeBW the
// first round trip whose queue stands as long as the longest seen (full)
// sets the bound with no loss of its own, and a full queue that then falls
// below seven tenths of that (a loss-based flow backing off) cuts it as a
// loss would, bbrCutRounds round trips after the last cut at the soonest.
// Beside CUBIC the association so carries about what a CUBIC flow does;
// on a lossy path it has to itself the queue stays near empty and BBR runs
// unbounded: a bound that queues of the association's own set (Startup's,
// which Drain empties; ProbeBW's probe held up by a host's scheduling
// delay) is lifted at the next loss that meets no queue.
//
// The bound never goes below what the estimated bottleneck rate needs at
// the base RTT (BBR's model with a gain of 1), so that a cut that a random
// loss made at a queue of BBR's own (its rate estimate above the link's)
// leaves the pipe full; beside a queue others keep up, the rate, and so
// the floor, still falls.
//
// The price: beside BBRv1, which keeps a queue standing whatever the
// others do and backs off from no loss, the bound fares as CUBIC does
// there, with a small share of the link. Left as BBRv1 has it: losses in
// Startup and Drain, whose queue is BBR's own; a bottleneck queue under a
// quarter of the base RTT, where a full queue looks empty.
type bbrBound struct {
	on  bool  // a congestive loss has been seen
	win cubic // the bound, once on

	baseRTT  time.Duration // the smallest RTT sample
	roundMin time.Duration // the smallest RTT sample of this round trip (0: none yet)
	lastMin  time.Duration // of the last round trip (0: none)
	peak     time.Duration // the longest queue a round trip stood above (lastMin less baseRTT)
	wasFull  bool          // a round trip since the last cut found the queue full
	rounds   uint64        // round trips counted
	lastCut  uint64        // the round trip of the last cut
}

// A queue is full at nine tenths of the longest seen, and has fallen, as
// it does when a flow that filled it backed off, below seven tenths; cuts
// come at least bbrCutRounds round trips apart.
const (
	bbrFullTenths = 9
	bbrDipTenths  = 7
	bbrCutRounds  = 4
)

// The queue above the base RTT that makes a loss congestive: a quarter of
// the base RTT, and at least bbrQueueFloor (a host's scheduling delays).
const (
	bbrQueueShare = 4
	bbrQueueFloor = 4 * time.Millisecond
)

// onAck tracks the RTTs (roundStart: this SACK began a round trip) and
// grows the bound as CUBIC's window, in Fast Recovery too (whose losses,
// random ones, the bound ignores), never past twice the window BBR's model
// asks for (where it no longer binds).
func (q *bbrBound) onAck(e *AckEvent, roundStart bool, mode bbrMode, model uint32) {
	if q == nil {
		return
	}
	if roundStart {
		q.lastMin, q.roundMin = q.roundMin, 0
		q.full(e, mode)
	}
	if e.RTT > 0 {
		if q.baseRTT == 0 || e.RTT < q.baseRTT {
			q.baseRTT = e.RTT
		}
		if q.roundMin == 0 || e.RTT < q.roundMin {
			q.roundMin = e.RTT
		}
	}
	if q.on {
		grow := *e
		grow.InRecovery = false
		q.win.OnAck(&grow)
		q.win.cwnd = min(q.win.cwnd, max(2*model, q.win.minWindow))
	}
}

// full reads the round trip that ended. A queue standing as long as the
// longest seen is full: others fill it to the brim, and a flow that reads
// loss as congestion loses packets there, where this one, paced, may not;
// the first such round trip in ProbeBW sets the bound. A full queue that
// then falls is one such flow backing off from a loss: the bound is cut
// with it, unless it was just cut (at its own loss).
func (q *bbrBound) full(e *AckEvent, mode bbrMode) {
	if q.lastMin == 0 || q.baseRTT == 0 {
		return
	}
	q.rounds++
	queue := q.lastMin - q.baseRTT
	q.peak = max(q.peak, queue)
	switch {
	case queue*10 >= q.peak*bbrFullTenths && q.queueStands():
		q.wasFull = true
		if !q.on && mode == bbrProbeBW {
			q.cut(max(e.PriorInflight, e.MTU), e.MTU)
		}
	case q.wasFull && queue*10 < q.peak*bbrDipTenths:
		q.wasFull = false
		if mode == bbrProbeBW && q.rounds >= q.lastCut+bbrCutRounds {
			q.cut(max(e.PriorInflight, e.MTU), e.MTU)
		}
	}
}

// cut is a congestion event of the bound's CUBIC window at a flight of
// inflight bytes (setting the bound at it first): 0.7 of it.
func (q *bbrBound) cut(inflight, mtu uint32) {
	q.lastCut = q.rounds
	if !q.on {
		q.on = true
		q.win.minWindow, q.win.cwnd = mtu, inflight
	}
	q.win.cwnd = max(min(q.win.cwnd, inflight), mtu)
	q.win.OnLoss(LossEvent{Inflight: inflight, First: true, MTU: mtu})
}

// queueStands reports whether the last round trip's RTTs and this one's
// so far all stood above the base RTT by the threshold.
func (q *bbrBound) queueStands() bool {
	if q.lastMin == 0 {
		return false
	}
	least := q.lastMin
	if q.roundMin > 0 {
		least = min(least, q.roundMin)
	}

	return least-q.baseRTT > max(q.baseRTT/bbrQueueShare, bbrQueueFloor)
}

// onLoss cuts the bound, or sets it, at a congestive loss that begins a
// Fast Recovery in ProbeBW, and lifts it at a random one: a loss that
// begins a Fast Recovery in ProbeBW while no queue stands, this round
// trip and the last.
//
// Startup fills the bottleneck's queue and Drain empties it, which the
// rules read as a loss-based flow backing off, and on the bed ProbeBW's
// probe plus a host's scheduling delay holds a queue above the threshold
// for a round trip or two: on a lossy path the association has to itself,
// the bound is set on almost every start and now and then after. Left in
// place it keeps cwnd at its floor, one estimated bandwidth-delay product,
// which RTT noise and the lost chunks still counted in flight leave short
// of the link (5-10% on the bed). Beside a loss-based flow on a clean path
// the association loses packets only where the queue overflows, so the
// bound stays; with random loss there too, such a flow holds little queue
// and the association may take more, as the fairness goal allows.
func (q *bbrBound) onLoss(e LossEvent, mode bbrMode) {
	if q == nil || !e.First || mode != bbrProbeBW {
		return
	}
	switch {
	case q.queueStands():
		q.cut(e.Inflight, e.MTU)
	case q.queueEmpty():
		q.on, q.wasFull = false, false
	}
}

// queueEmpty reports whether the last round trip's RTTs and this one's so
// far all stood below the threshold above the base RTT (or near it).
func (q *bbrBound) queueEmpty() bool {
	if q.lastMin == 0 || q.baseRTT == 0 {
		return false
	}

	return max(q.lastMin, q.roundMin)-q.baseRTT <= max(q.baseRTT/bbrQueueShare, bbrQueueFloor)
}

// onRTO: a bound in place meets a timeout as CUBIC does.
func (q *bbrBound) onRTO(e RTOEvent) {
	if q != nil && q.on {
		q.win.OnRTO(e)
	}
}

func (q *bbrBound) onIdleRestart(now time.Time, idle time.Duration) {
	if q != nil && q.on {
		q.win.OnIdleRestart(now, idle)
	}
}

// limit is cwnd under the bound, never below floor: what the estimated
// rate needs at the base RTT, so that a bound a random loss set by mistake
// (a standing queue of BBR's own) still fills the pipe, while beside a
// queue that others keep up it lets the rate fall.
func (q *bbrBound) limit(cwnd, floor uint32) uint32 {
	if q == nil || !q.on {
		return cwnd
	}

	return min(cwnd, max(q.win.cwnd, floor))
}

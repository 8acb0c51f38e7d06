// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"sync/atomic"
	"time"
)

// HyStart++ (RFC 9406): slow start that leaves before the
// bottleneck's queue overflows. Each round trip (a round ends when the
// cumulative TSN reaches the highest TSN sent when it began) keeps the
// smallest RTT sample of its SACKs; once a round has eight samples and its
// minimum is above the last round's by a threshold (an eighth of the last
// round's minimum, between 4 and 16 ms), the queue is growing: the window
// then grows a quarter as fast (Conservative Slow Start, CSS) for up to
// five rounds (the one it began in among them), going back to slow start
// if a later round's RTT falls back below the minimum that began it, and
// enters congestion avoidance (ssthresh = cwnd, less a byte) after the
// five. A loss or a timeout ends it as it ends slow start.
//
// A sample is the newest newly acknowledged original transmission's RTT on
// a SACK (AckEvent.RTT); the peer acknowledges every second packet, so it
// is seldom a delayed SACK's. A controller calls onAck on its SACKs in
// slow start and reset on a loss; ending slow start is its own (reno sets
// ssthresh a byte below cwnd).
const (
	hsMinRTTThresh = 4 * time.Millisecond
	hsMaxRTTThresh = 16 * time.Millisecond
	hsMinRTTDiv    = 8
	hsNRTTSample   = 8
	hsCSSGrowthDiv = 4
	hsCSSRounds    = 5
)

// hystart is HyStart++'s state, kept by a controller (reno, cubic) that
// slow-starts. Durations of 0 stand for RFC 9406's infinity.
type hystart struct {
	roundEnd     uint32        // the round ends when the cumulative TSN reaches it
	inRound      bool          // roundEnd is set
	lastRoundMin time.Duration // the last round's minimum RTT
	roundMin     time.Duration // this round's so far
	samples      int           // this round's samples
	cssBaseline  time.Duration // the round minimum that began CSS; 0 out of CSS
	cssRounds    int           // rounds ended in CSS
	// css counts CSS entries, exits the slow starts it ended; read by
	// other goroutines (HyStartCSS).
	css, exits atomic.Uint64
}

// SetHyStart turns HyStart++ on or off (off by default) for a controller
// that slow-starts (reno, cubic): see hystart.go.
func (a *Association) SetHyStart(on bool) {
	var v uint32
	if on {
		v = 1
	}
	atomic.StoreUint32(&a.hystartOn, v)
}

// HyStart reports whether SetHyStart turned it on.
func (a *Association) HyStart() bool { return atomic.LoadUint32(&a.hystartOn) == 1 }

// hyStarter is a controller that runs HyStart++.
type hyStarter interface{ hyStart() *hystart }

// HyStartCSS returns how many times HyStart++ has found the RTT rising and
// entered Conservative Slow Start; 0 for a controller without it.
func (a *Association) HyStartCSS() uint64 {
	a.lock.RLock()
	defer a.lock.RUnlock()
	if h, ok := a.cc.(hyStarter); ok {
		return h.hyStart().css.Load()
	}

	return 0
}

// onAck runs on a SACK that acknowledged new bytes in slow start (not in
// Fast Recovery): it ends rounds, takes the SACK's sample, and returns
// the divisor of slow start's growth, 1 or hsCSSGrowthDiv in CSS, and
// whether to end slow start (after hsCSSRounds rounds of CSS).
func (hs *hystart) onAck(e *AckEvent) (div uint32, endSlowStart bool) {
	if !e.HyStart {
		return 1, false
	}
	if !hs.inRound || !sna32LT(e.CumTSN, hs.roundEnd) {
		hs.lastRoundMin, hs.roundMin, hs.samples = hs.roundMin, 0, 0
		hs.roundEnd, hs.inRound = e.NextTSN-1, true
		if hs.inCSS() {
			hs.cssRounds++
			if hs.cssRounds >= hsCSSRounds {
				hs.reset()
				hs.exits.Add(1)

				return 1, true
			}
		}
	}
	if e.RTT > 0 {
		if hs.roundMin == 0 || e.RTT < hs.roundMin {
			hs.roundMin = e.RTT
		}
		hs.samples++
	}
	if hs.samples < hsNRTTSample || hs.roundMin == 0 {
		return hs.div(), false
	}
	if hs.inCSS() {
		// A round after the one CSS began in whose RTT is back below the
		// baseline: a false alarm. (In the round it began in, the minimum
		// only falls, and CSS would end and begin again on each sample.)
		if hs.cssRounds > 0 && hs.roundMin < hs.cssBaseline {
			hs.cssBaseline, hs.cssRounds = 0, 0
		}

		return hs.div(), false
	}
	if hs.lastRoundMin > 0 {
		thresh := min(max(hs.lastRoundMin/hsMinRTTDiv, hsMinRTTThresh), hsMaxRTTThresh)
		if hs.roundMin >= hs.lastRoundMin+thresh {
			hs.cssBaseline, hs.cssRounds = hs.roundMin, 0 // roundMin > 0 here
			hs.css.Add(1)
		}
	}

	return hs.div(), false
}

// inCSS reports whether HyStart++ is in Conservative Slow Start.
func (hs *hystart) inCSS() bool { return hs.cssBaseline > 0 }

func (hs *hystart) div() uint32 {
	if hs.inCSS() {
		return hsCSSGrowthDiv
	}

	return 1
}

// reset ends CSS and forgets the rounds, on a loss or when slow start
// ends: the next slow start (after a timeout, or a fast recovery that
// leaves cwnd at ssthresh) starts afresh, its first round compared with
// nothing. RFC 9406 uses HyStart++ in the first slow start only; here it
// runs in any, which ssthresh bounds anyway. The counters stay.
func (hs *hystart) reset() {
	hs.roundEnd, hs.inRound, hs.lastRoundMin, hs.roundMin = 0, false, 0, 0
	hs.samples, hs.cssBaseline, hs.cssRounds = 0, 0, 0
}

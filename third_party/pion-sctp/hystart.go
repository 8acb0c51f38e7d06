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
// a SACK; the peer acknowledges every second packet, so it is seldom a
// delayed SACK's.
const (
	hsMinRTTThresh = 4 * time.Millisecond
	hsMaxRTTThresh = 16 * time.Millisecond
	hsMinRTTDiv    = 8
	hsNRTTSample   = 8
	hsCSSGrowthDiv = 4
	hsCSSRounds    = 5
)

// hystart is HyStart++'s state; the caller holds the association's lock.
// Durations of 0 stand for RFC 9406's infinity.
type hystart struct {
	roundEnd     uint32        // the round ends when the cumulative TSN reaches it
	inRound      bool          // roundEnd is set
	lastRoundMin time.Duration // the last round's minimum RTT
	roundMin     time.Duration // this round's so far
	samples      int           // this round's samples
	cssBaseline  time.Duration // the round minimum that began CSS; 0 out of CSS
	cssRounds    int           // rounds ended in CSS
	sample       time.Duration // the SACK being processed's sample, 0 if none
}

// SetHyStart turns HyStart++ on or off (off by default):
// see hystart.go.
func (a *Association) SetHyStart(on bool) {
	var v uint32
	if on {
		v = 1
	}
	atomic.StoreUint32(&a.hystartOn, v)
}

// HyStart reports whether SetHyStart turned it on.
func (a *Association) HyStart() bool { return atomic.LoadUint32(&a.hystartOn) == 1 }

// HyStartCSS returns how many times HyStart++ has found the RTT rising and
// entered Conservative Slow Start.
func (a *Association) HyStartCSS() uint64 { return a.stats.getNumHyStartCSS() }

// hystartSample notes an RTT sample of the SACK being processed (the
// smallest is the newest chunk's).
func (a *Association) hystartSample(rtt time.Duration) {
	if rtt > 0 && (a.hs.sample == 0 || rtt < a.hs.sample) {
		a.hs.sample = rtt
	}
}

// hystartOnAck runs on a SACK that acknowledged new bytes in slow start
// (cwnd at or below ssthresh, not in Fast Recovery), once the cumulative
// TSN has taken the SACK's; it ends rounds, takes the SACK's sample, and
// returns the divisor of slow start's growth: 1, or hsCSSGrowthDiv in CSS.
// It may end slow start (ssthresh just below cwnd).
func (a *Association) hystartOnAck() uint32 {
	hs := &a.hs
	sample := hs.sample
	hs.sample = 0
	if !a.HyStart() {
		return 1
	}
	if !hs.inRound || !sna32LT(a.cumulativeTSNAckPoint, hs.roundEnd) {
		hs.lastRoundMin, hs.roundMin, hs.samples = hs.roundMin, 0, 0
		hs.roundEnd, hs.inRound = a.myNextTSN-1, true
		if hs.inCSS() {
			hs.cssRounds++
			if hs.cssRounds >= hsCSSRounds {
				// Congestion avoidance: RFC 9260 slow-starts while
				// cwnd <= ssthresh, so ssthresh is one byte below it.
				a.hystartReset()
				a.ssthresh = a.CWND() - 1
				a.stats.incHyStartExits()

				return 1
			}
		}
	}
	if sample > 0 {
		if hs.roundMin == 0 || sample < hs.roundMin {
			hs.roundMin = sample
		}
		hs.samples++
	}
	if hs.samples < hsNRTTSample || hs.roundMin == 0 {
		return a.hystartDiv()
	}
	if hs.inCSS() {
		// A round after the one CSS began in whose RTT is back below the
		// baseline: a false alarm. (In the round it began in, the minimum
		// only falls, and CSS would end and begin again on each sample.)
		if hs.cssRounds > 0 && hs.roundMin < hs.cssBaseline {
			hs.cssBaseline, hs.cssRounds = 0, 0
		}

		return a.hystartDiv()
	}
	if hs.lastRoundMin > 0 {
		thresh := min(max(hs.lastRoundMin/hsMinRTTDiv, hsMinRTTThresh), hsMaxRTTThresh)
		if hs.roundMin >= hs.lastRoundMin+thresh {
			hs.cssBaseline, hs.cssRounds = hs.roundMin, 0 // roundMin > 0 here
			a.stats.incHyStartCSS()
		}
	}

	return a.hystartDiv()
}

// inCSS reports whether HyStart++ is in Conservative Slow Start.
func (hs *hystart) inCSS() bool { return hs.cssBaseline > 0 }

func (a *Association) hystartDiv() uint32 {
	if a.hs.inCSS() {
		return hsCSSGrowthDiv
	}

	return 1
}

// hystartReset ends CSS and forgets the rounds, on a loss or when slow
// start ends: the next slow start (after a timeout, or a fast recovery
// that leaves cwnd at ssthresh) starts afresh, its first round compared
// with nothing. RFC 9406 uses HyStart++ in the first slow start only;
// here it runs in any, which ssthresh bounds anyway.
func (a *Association) hystartReset() {
	a.hs = hystart{}
}

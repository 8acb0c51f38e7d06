// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import "time"

// reno is RFC 9260's congestion control (sec 7.2), the association's
// default, with braid's changes: it stands for n reno flows (MulTCP,
// SetFlows), its slow start counts a round's flight as Linux does, and it
// may run HyStart++ (SetHyStart). With one flow and HyStart++ off it is
// RFC 9260's, with growth on gap-acknowledged bytes (sec 7.2.2).
type reno struct {
	cwnd, ssthresh    uint32
	partialBytesAcked uint32
	minWindow, caStep uint32
	// recoveryCwnd is cwnd when Fast Recovery began, recoveryFlows the
	// flow count then, recoveryCuts the flows' shares given up since.
	recoveryCwnd, recoveryCuts, recoveryFlows uint32
	hs                                        hystart
}

var _ CongestionControl = (*reno)(nil)

func newReno() *reno { return &reno{} }

// Name is "reno".
func (r *reno) Name() string { return CCReno }

// Start sets the initial window (ten packets, as TCP's), one per flow,
// and ssthresh.
func (r *reno) Start(p CCStart) {
	r.minWindow, r.caStep = p.MinWindow, p.CAStep
	r.setCwnd(initialCwnd(p.MTU) * max(p.Flows, 1))
	r.ssthresh = p.SSThresh
}

// beforeFirstData gives an association set to n flows before its first
// DATA chunk n initial windows, as n TCP connections
// start with n.
func (r *reno) beforeFirstData(n, mtu uint32) {
	if n > 1 {
		r.setCwnd(max(r.cwnd, n*initialCwnd(mtu)))
	}
}

// Window is cwnd.
func (r *reno) Window() uint32 { return r.cwnd }

// SSThresh is ssthresh.
func (r *reno) SSThresh() uint32 { return r.ssthresh }

func (r *reno) hyStart() *hystart { return &r.hs }

// PacingRate paces at 2·cwnd/minRTT in slow start, 1.25· after.
func (r *reno) PacingRate(minRTT time.Duration) float64 {
	return windowPacingRate(r.cwnd, r.ssthresh, minRTT)
}

func (r *reno) setCwnd(cwnd uint32) { r.cwnd = max(cwnd, r.minWindow) }

// OnAck grows the window: slow start below ssthresh, congestion
// avoidance above it. In Fast Recovery an association of
// several flows is in congestion avoidance, though each cut leaves cwnd
// equal to ssthresh, which would read as slow start, where recovery stops
// growth: the flows that lost nothing keep growing, one MTU a round trip
// each, as n TCP connections' would (the flows that lost a packet do not,
// as one flow does not).
func (r *reno) OnAck(e *AckEvent) {
	if r.cwnd <= r.ssthresh && !(e.InRecovery && r.recoveryFlows > 1) {
		r.slowStart(e)
	} else {
		r.hs.inRound = false // no rounds out of slow start
		r.congestionAvoidance(e)
	}
	// The count starts anew once all data sent has been acknowledged
	// (RFC 9260 sec 7.2.2), in slow start too.
	if e.Inflight == 0 {
		r.partialBytesAcked = 0
	}
}

// slowStart is RFC 4960 sec 7.2.1 (slowStartGrowth), ended by HyStart++
// with ssthresh a byte below cwnd (RFC 9260 slow-starts while cwnd <=
// ssthresh).
func (r *reno) slowStart(e *AckEvent) {
	cwnd, end := slowStartGrowth(&r.hs, e, r.cwnd)
	if end {
		r.ssthresh = r.cwnd - 1
	}
	r.setCwnd(cwnd)
}

// slowStartGrowth is a SACK's growth of cwnd in slow start, for reno and
// cubic, and whether HyStart++ ends slow start (then cwnd does not grow).
// RFC 4960 sec 7.2.1: cwnd grows, by at most the bytes acknowledged, only
// if it is fully used, the SACK advances the cumulative TSN and the sender
// is not in Fast Recovery (RFC 9260 dropped the second condition).
// "Fully used" is data waiting, or a flight in this round of
// more than half of cwnd, as Linux judges a slow-starting TCP sender
// cwnd-limited (tcp_is_cwnd_limited, max_packets_out). A sender that
// hands over a round's data at once, as braid's scheduler does with units,
// fills cwnd and then waits for the results; its queue is empty when most
// SACKs come, and its window grew by about half a round trip instead of
// doubling. Growth stops once cwnd is twice the round's flight. HyStart++
// divides the growth in Conservative Slow Start.
func slowStartGrowth(hs *hystart, e *AckEvent, cwnd uint32) (uint32, bool) {
	if e.InRecovery {
		return cwnd, false
	}
	div, end := hs.onAck(e)
	if end {
		return cwnd, true
	}
	if e.CumAdvanced && (e.Pending || cwnd < 2*e.MaxFlight) {
		cwnd += min(e.Acked, cwnd) / div
	}

	return cwnd, false
}

// congestionAvoidance is RFC 9260 sec 7.2.2: partial_bytes_acked counts
// the bytes every SACK acknowledges, by the cumulative TSN or by gap
// blocks (RFC 4960's text counted only SACKs that advanced the cumulative
// TSN), and once it reaches cwnd while data waits, cwnd grows by one MTU
// for each flow.
func (r *reno) congestionAvoidance(e *AckEvent) {
	r.partialBytesAcked += e.Acked
	if r.partialBytesAcked >= r.cwnd && e.Pending {
		r.partialBytesAcked -= r.cwnd
		step := max(e.MTU*max(e.Flows, 1), r.caStep)
		if e.InRecovery && r.recoveryFlows > 1 {
			// The flows that lost nothing in this recovery.
			step = e.MTU * (r.recoveryFlows - min(r.recoveryCuts, r.recoveryFlows))
		}
		r.setCwnd(r.cwnd + step)
	}
	// The count holds no more than cwnd, so that bytes
	// acknowledged while no data waited earn at most one step later, now
	// that Fast Recovery no longer zeroes it.
	r.partialBytesAcked = min(r.partialBytesAcked, r.cwnd)
}

// OnLoss cuts the window: the first loss of Fast Recovery records the
// window and flow count it began with, and each loss then takes a flow's
// share (recoveryCut). A loss ends HyStart++'s rounds.
func (r *reno) OnLoss(e LossEvent) {
	if e.First {
		r.recoveryCwnd, r.recoveryCuts, r.recoveryFlows = r.cwnd, 0, max(e.Flows, 1)
		r.recoveryCut(e.MTU)
		r.hs.reset()

		return
	}
	r.recoveryCut(e.MTU) // another flow's loss
}

// recoveryCut sets ssthresh and cwnd for a chunk found lost in the window
// Fast Recovery began with (at recoveryCwnd). With one flow the first loss
// halves it and the others leave it. With n, each loss stands for one
// more of the n flows losing a packet, which gives up its share (1/(2n)
// of recoveryCwnd) once: the first n losses cut, down to half, as the
// window of n reno flows that each lost one would be.
//
// The flow count is the one recovery began with, so that the tuner
// changing it meanwhile cannot raise the window, and a cut never does.
func (r *reno) recoveryCut(mtu uint32) {
	n := max(r.recoveryFlows, 1)
	if r.recoveryCuts >= n {
		return
	}
	r.recoveryCuts++
	// The flow that lost a packet starts its count of
	// partial bytes anew, the others keep theirs, so that after k cuts
	// (n-k)/n of the count is left. Zeroed on the first, as RFC 9260 has
	// it for one flow, the count of n flows that lose a packet every round
	// trip or two seldom reached cwnd, and their window stopped growing.
	r.partialBytesAcked -= r.partialBytesAcked / (n - r.recoveryCuts + 1)
	cut := r.recoveryCwnd / 2
	if n > 1 {
		// From the window now, so that what the flows that
		// lost nothing grew since recovery began (OnAck) stays.
		cut = r.cwnd - min(r.recoveryCwnd/(2*n), r.cwnd)
	}
	r.ssthresh = max(min(cut, r.cwnd), 4*mtu)
	r.setCwnd(r.ssthresh)
}

// lossCut is cwnd less the share one of n flows gives up on a loss.
func (r *reno) lossCut(n uint32) uint32 {
	if n <= 1 {
		return r.cwnd / 2
	}

	return r.cwnd - r.cwnd/(2*n)
}

// OnRecoveryEnd changes nothing: the window was cut on entry.
func (r *reno) OnRecoveryEnd(time.Time) {}

// OnRTO is RFC 9260 sec 7.2.3: ssthresh = max(cwnd/2, 4·MTU), cwnd = one
// MTU. With n flows, the first timeout is one of them
// timing out, and takes 1/n of cwnd; a timeout after that (nothing
// acknowledged since) means the path itself is out, and all of them start
// over.
func (r *reno) OnRTO(e RTOEvent) {
	n := max(e.Flows, 1)
	if e.Consecutive > 1 {
		n = 1
	}
	r.ssthresh = max(r.lossCut(n), 4*e.MTU)
	r.setCwnd(max(r.cwnd/n*(n-1), e.MTU))
	r.hs.reset()
	if e.InRecovery {
		r.partialBytesAcked = 0
	}
}

// OnIdleRestart changes nothing (RFC 9260 sec 7.2.1's decay of an idle
// window was never implemented here).
func (r *reno) OnIdleRestart(time.Time, time.Duration) {}

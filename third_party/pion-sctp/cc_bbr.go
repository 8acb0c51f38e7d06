// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"math/rand/v2"
	"time"
)

// bbr is BBR version 1 (Cardwell et al., "BBR: Congestion-Based Congestion
// Control", ACM Queue 2016), as Linux's tcp_bbr.c has it.
// It models the path as a bottleneck rate (the largest delivery-rate
// sample of the last ten round trips, rate.go) and a propagation delay
// (the smallest RTT of the last ten seconds), paces at a gain times the
// rate, and keeps at most twice their product in flight. Its phases:
// Startup doubles the rate each round trip (gain 2/ln 2) until three
// rounds raise it by less than a quarter; Drain paces below it until the
// flight is down to one bandwidth-delay product; ProbeBW then cycles
// through eight phases of a round trip each, pacing at 1.25 (probe), 0.75
// (drain what the probe queued), then 1 for six; ProbeRTT, when the
// minimum RTT has not been seen for ten seconds, holds four packets in
// flight for 200 ms and a round trip, to measure it afresh.
//
// Loss: BBRv1 does not read random loss as congestion. (bbr-cubic, this
// with a bound, does read a loss while a queue stands as congestion,
// cc_bbr_bound.go.) In Fast Recovery
// its first round is packet conservation (cwnd = the flight plus what
// each SACK acknowledges), after which cwnd grows back towards the model's
// target; the end of recovery restores the window it had before. A probe
// phase ends early on a loss. A T3-rtx timeout takes cwnd to one MTU and
// restarts the detection of a full pipe; once the data in flight at the
// timeout is acknowledged, cwnd is restored.
//
// Why version 1 and not the IETF draft's BBRv3: v1 is what Linux's `bbr`
// module is (this host's default congestion control, and so the TCP that
// braid's bar is measured against), mainline and long in use. v3 answers
// loss above 2% in a round trip by cutting its inflight_hi bound to 0.7 of
// the flight, then probes back up over seconds (ProbeBW's refill and up
// phases come every 2-3 s). Under 1% random loss a round trip of about 430
// packets (100 Mbit/s, 50 ms) loses 4.3 on average, with a standard
// deviation of 2; rounds above 2% (8.6) come every few dozen round trips,
// each a cut v3 then has to probe back from, at exactly the lossy paths
// braid is for. v1 keeps no such bound.
//
// Left out of Linux's v1: the long-term ("policer") bandwidth estimate,
// which takes over only when a fifth of packets are lost; the ack-delay
// flag on min-RTT samples (SCTP SACKs do not say whether they were
// delayed); the departure-time estimate of packets in the network (the
// association's pacer sends now or not at all, so the flight is the
// estimate). Linux takes the packets a SACK marks lost off cwnd in
// recovery, because marking them takes them out of its flight; SCTP's
// flight keeps a lost chunk until it is acknowledged, and fast
// retransmissions leave beyond cwnd, so that cut would count each loss
// twice.
type bbr struct {
	mode       bbrMode
	cwnd       uint32
	minWindow  uint32
	mtu        uint32
	pacingRate float64 // bytes a second; 0 until the first RTT sample
	pacingGain float64
	cwndGain   float64

	bw                 maxFilter // bytes a second, by round
	rounds             uint64    // round trips counted
	nextRoundDelivered uint64    // a round ends when a sample's PriorDelivered reaches it
	roundStart         bool      // this SACK began a round
	delivered          uint64    // the association's delivered bytes

	minRTT      time.Duration // 0 until the first sample
	minRTTStamp time.Time

	probeRTTDone      time.Time // when ProbeRTT may end (zero: not yet set)
	probeRTTRoundDone bool
	idleRestart       bool
	// Samples of data sent in ProbeRTT and until what was then in flight
	// is delivered are app-limited (PriorDelivered within the bounds).
	appLimitedFrom, appLimitedUntil uint64

	fullBw        float64
	fullBwCount   int
	fullBwReached bool

	cycleIdx   int
	cycleStamp time.Time

	priorCwnd          uint32 // cwnd before recovery or ProbeRTT
	packetConservation bool
	inRecovery         bool   // Fast Recovery, or after a timeout until rtoExit
	recoveryBegan      bool   // since the last SACK
	recoveryEnded      bool   // since the last SACK
	rtoExit            uint64 // delivered count that ends a timeout's recovery (0: none)
	lost               uint32 // bytes found lost since the last SACK

	// ACK aggregation: extra bytes acknowledged beyond what the estimated
	// rate explains, the largest of two windows of five rounds each.
	ackEpochStart time.Time
	ackEpochAcked uint64
	extraAcked    [2]uint64
	extraRounds   int
	extraIdx      int

	rand func(n int) int // ProbeBW's starting phase; tests fix it

	bound *bbrBound // bbr-cubic's bound on cwnd; nil for bbr
}

type bbrMode int

// BBR's phases.
const (
	bbrStartup bbrMode = iota
	bbrDrain
	bbrProbeBW
	bbrProbeRTT
)

func (m bbrMode) String() string {
	return [...]string{"Startup", "Drain", "ProbeBW", "ProbeRTT"}[m]
}

// BBR's constants, tcp_bbr.c's.
const (
	bbrHighGain         = 2.885 // 2/ln 2: Startup's gain, doubling each round
	bbrDrainGain        = 1 / bbrHighGain
	bbrCwndGain         = 2  // cwnd in ProbeBW, in bandwidth-delay products
	bbrBwRounds         = 10 // the bandwidth filter's window
	bbrCycleLen         = 8  // ProbeBW's phases
	bbrCycleRand        = 7  // ProbeBW starts in one of its last 7 phases
	bbrFullBwThresh     = 1.25
	bbrFullBwCount      = 3
	bbrMinRTTWindow     = 10 * time.Second
	bbrProbeRTTTime     = 200 * time.Millisecond
	bbrMinTargetPackets = 4    // cwnd's floor, and ProbeRTT's window
	bbrPacingMargin     = 0.01 // pace this much below the estimate
	bbrExtraAckedRounds = 5
	bbrExtraAckedMax    = 100 * time.Millisecond // of the rate, at most
	bbrInitialPackets   = 10
)

// bbrProbeGains are ProbeBW's pacing gains.
var bbrProbeGains = [bbrCycleLen]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

var _ CongestionControl = (*bbr)(nil)

func newBBR() *bbr { return &bbr{rand: rand.IntN} }

// newBBRCubic is bbr-cubic: BBR with the bound of cc_bbr_bound.go.
func newBBRCubic() *bbr {
	b := newBBR()
	b.bound = &bbrBound{}

	return b
}

// Name is "bbr", or "bbr-cubic" with the bound.
func (b *bbr) Name() string {
	if b.bound != nil {
		return CCBBRCubic
	}

	return CCBBR
}

// Start begins in Startup with the initial window (ten packets).
func (b *bbr) Start(p CCStart) {
	b.mtu, b.minWindow = p.MTU, p.MinWindow
	b.cwnd = max(initialCwnd(p.MTU), b.minWindow)
	b.mode = bbrStartup
	b.minRTTStamp, b.ackEpochStart = p.Now, p.Now
	b.updateGains()
}

// Window is cwnd.
func (b *bbr) Window() uint32 { return b.cwnd }

// PacingRate is the model's: before it has an RTT, Startup's gain over
// cwnd per minRTT.
func (b *bbr) PacingRate(minRTT time.Duration) float64 {
	if b.pacingRate == 0 {
		return bbrHighGain * float64(b.cwnd) / minRTT.Seconds()
	}

	return b.pacingRate
}

// Mode is the phase BBR is in (for tests and traces).
func (b *bbr) Mode() string { return b.mode.String() }

// OnAck runs the model on a SACK, then sets the pace and cwnd from it.
func (b *bbr) OnAck(e *AckEvent) {
	b.mtu = e.MTU
	b.delivered = e.Rate.TotalDelivered
	b.updateModel(e)
	bw := b.bw.get()
	b.bound.onAck(e, b.roundStart, b.mode, b.inflight(bw, b.cwndGain))
	b.setPacingRate(bw, b.pacingGain)
	b.setCwnd(e, bw)
	b.lost = 0
}

func (b *bbr) updateModel(e *AckEvent) {
	b.updateBw(e)
	b.updateAckAggregation(e)
	b.updateCyclePhase(e)
	b.checkFullBwReached(e)
	b.checkDrain(e)
	b.updateMinRTT(e)
	b.updateGains()
}

// updateBw counts round trips and feeds the bandwidth filter a sample
// unless it is app-limited and below the estimate.
func (b *bbr) updateBw(e *AckEvent) {
	b.roundStart = false
	rs := e.Rate
	if rs.Interval <= 0 {
		return
	}
	if rs.PriorDelivered >= b.nextRoundDelivered {
		b.nextRoundDelivered = b.delivered
		b.rounds++
		b.roundStart = true
		b.packetConservation = false
	}
	sample := rs.Rate()
	if !b.appLimited(rs) || sample >= b.bw.get() {
		b.bw.update(b.rounds, sample, bbrBwRounds)
	}
}

// appLimited reports whether a sample is app-limited: the association
// says so, or its data was sent in ProbeRTT.
func (b *bbr) appLimited(rs RateSample) bool {
	return rs.AppLimited || b.appLimitedUntil != 0 &&
		rs.PriorDelivered >= b.appLimitedFrom && rs.PriorDelivered <= b.appLimitedUntil
}

// updateAckAggregation estimates how many bytes SACKs acknowledge beyond
// what the rate explains (aggregated or delayed SACKs), for cwnd to cover.
func (b *bbr) updateAckAggregation(e *AckEvent) {
	rs := e.Rate
	if rs.Acked == 0 || rs.Interval <= 0 {
		return
	}
	if b.roundStart {
		b.extraRounds++
		if b.extraRounds >= bbrExtraAckedRounds {
			b.extraRounds = 0
			b.extraIdx ^= 1
			b.extraAcked[b.extraIdx] = 0
		}
	}
	expected := uint64(b.bw.get() * e.Now.Sub(b.ackEpochStart).Seconds())
	if b.ackEpochAcked <= expected || b.ackEpochAcked+rs.Acked >= 1<<20*uint64(b.mtu) {
		b.ackEpochAcked, b.ackEpochStart, expected = 0, e.Now, 0
	}
	b.ackEpochAcked += rs.Acked
	extra := min(b.ackEpochAcked-expected, uint64(b.cwnd))
	b.extraAcked[b.extraIdx] = max(b.extraAcked[b.extraIdx], extra)
}

// aggregationCwnd is what cwnd adds for ACK aggregation, once the pipe is
// full.
func (b *bbr) aggregationCwnd() uint32 {
	if !b.fullBwReached {
		return 0
	}
	most := b.bw.get() * bbrExtraAckedMax.Seconds()

	return uint32(min(float64(max(b.extraAcked[0], b.extraAcked[1])), most))
}

// updateCyclePhase moves ProbeBW to its next phase when this one is done.
func (b *bbr) updateCyclePhase(e *AckEvent) {
	if b.mode == bbrProbeBW && b.nextCyclePhase(e) {
		b.advanceCyclePhase(e.Now)
	}
}

// nextCyclePhase: a phase lasts a minimum RTT; a probe (gain above 1)
// lasts until the flight reaches its target or a loss, a drain (below 1)
// at most until the flight is down to one bandwidth-delay product.
func (b *bbr) nextCyclePhase(e *AckEvent) bool {
	fullLength := e.Now.Sub(b.cycleStamp) > b.minRTT
	if b.pacingGain == 1 {
		return fullLength
	}
	bw := b.bw.get()
	if b.pacingGain > 1 {
		return fullLength && (b.lost > 0 || e.PriorInflight >= b.inflight(bw, b.pacingGain))
	}

	return fullLength || e.PriorInflight <= b.inflight(bw, 1)
}

func (b *bbr) advanceCyclePhase(now time.Time) {
	b.cycleIdx = (b.cycleIdx + 1) % bbrCycleLen
	b.cycleStamp = now
}

// checkFullBwReached: Startup filled the pipe once three rounds (not
// app-limited) raised the estimate by less than a quarter.
func (b *bbr) checkFullBwReached(e *AckEvent) {
	if b.fullBwReached || !b.roundStart || b.appLimited(e.Rate) {
		return
	}
	if bw := b.bw.get(); bw >= b.fullBw*bbrFullBwThresh {
		b.fullBw, b.fullBwCount = bw, 0

		return
	}
	b.fullBwCount++
	b.fullBwReached = b.fullBwCount >= bbrFullBwCount
}

// checkDrain goes from Startup to Drain once the pipe is full, and from
// Drain to ProbeBW once the flight is down to one bandwidth-delay product.
func (b *bbr) checkDrain(e *AckEvent) {
	if b.mode == bbrStartup && b.fullBwReached {
		b.mode = bbrDrain
	}
	if b.mode == bbrDrain && e.Inflight <= b.inflight(b.bw.get(), 1) {
		b.resetProbeBW(e.Now)
	}
}

func (b *bbr) resetProbeBW(now time.Time) {
	b.mode = bbrProbeBW
	b.cycleIdx = bbrCycleLen - 1 - b.rand(bbrCycleRand)
	b.advanceCyclePhase(now)
}

func (b *bbr) resetMode(now time.Time) {
	if !b.fullBwReached {
		b.mode = bbrStartup

		return
	}
	b.resetProbeBW(now)
}

// updateMinRTT keeps the smallest RTT of the last ten seconds, and enters
// and leaves ProbeRTT.
func (b *bbr) updateMinRTT(e *AckEvent) {
	expired := e.Now.Sub(b.minRTTStamp) > bbrMinRTTWindow
	if e.RTT > 0 && (b.minRTT == 0 || e.RTT < b.minRTT || expired) {
		b.minRTT, b.minRTTStamp = e.RTT, e.Now
	}
	if expired && !b.idleRestart && b.mode != bbrProbeRTT {
		b.mode = bbrProbeRTT
		b.saveCwnd()
		b.probeRTTDone = time.Time{}
		b.appLimitedFrom = b.delivered
	}
	if b.mode == bbrProbeRTT {
		b.appLimitedUntil = max(b.delivered+uint64(e.Inflight), 1)
		b.probeRTT(e)
	}
	if e.Rate.Acked > 0 {
		b.idleRestart = false
	}
}

// probeRTT holds ProbeRTT's small flight for 200 ms and a round trip.
func (b *bbr) probeRTT(e *AckEvent) {
	switch {
	case b.probeRTTDone.IsZero() && e.Inflight <= b.minTarget():
		b.probeRTTDone = e.Now.Add(bbrProbeRTTTime)
		b.probeRTTRoundDone = false
		b.nextRoundDelivered = b.delivered
	case !b.probeRTTDone.IsZero():
		if b.roundStart {
			b.probeRTTRoundDone = true
		}
		if b.probeRTTRoundDone {
			b.checkProbeRTTDone(e.Now)
		}
	}
}

func (b *bbr) checkProbeRTTDone(now time.Time) {
	if b.probeRTTDone.IsZero() || !now.After(b.probeRTTDone) {
		return
	}
	b.minRTTStamp = now // the next ProbeRTT is ten seconds away
	b.cwnd = max(b.cwnd, b.priorCwnd)
	b.resetMode(now)
}

func (b *bbr) updateGains() {
	switch b.mode {
	case bbrStartup:
		b.pacingGain, b.cwndGain = bbrHighGain, bbrHighGain
	case bbrDrain:
		b.pacingGain, b.cwndGain = bbrDrainGain, bbrHighGain
	case bbrProbeBW:
		b.pacingGain, b.cwndGain = bbrProbeGains[b.cycleIdx], bbrCwndGain
	case bbrProbeRTT:
		b.pacingGain, b.cwndGain = 1, 1
	}
}

// setPacingRate paces at gain times the estimate, less the margin; until
// the pipe is full only ever faster.
func (b *bbr) setPacingRate(bw, gain float64) {
	if b.pacingRate == 0 && b.minRTT > 0 {
		b.pacingRate = bbrHighGain * float64(b.cwnd) / b.minRTT.Seconds()
	}
	rate := bw * gain * (1 - bbrPacingMargin)
	if rate > 0 && (b.fullBwReached || rate > b.pacingRate) {
		b.pacingRate = rate
	}
}

// bdp is gain times the bandwidth-delay product, in bytes (the initial
// window until there is an RTT).
func (b *bbr) bdp(bw, gain float64) uint32 {
	if b.minRTT == 0 {
		return initialCwnd(b.mtu)
	}

	return uint32(bw*b.minRTT.Seconds()*gain) + 1
}

// quantizationBudget adds room for what the hosts hold (tcp_bbr.c's three
// TSO bursts: a millisecond of the pace each, two packets at least), kept
// even in packets, and two packets more in ProbeBW's probe.
func (b *bbr) quantizationBudget(cwnd uint32) uint32 {
	segs := min(max(uint32(b.pacingRate/1000)/b.mtu, 2), 127)
	if b.pacingRate < 1.2e6/8 {
		segs = 1
	}
	cwnd += 3 * segs * b.mtu
	if pkts := (cwnd + b.mtu - 1) / b.mtu; pkts%2 == 1 {
		cwnd = (pkts + 1) * b.mtu
	}
	if b.mode == bbrProbeBW && b.cycleIdx == 0 {
		cwnd += 2 * b.mtu
	}

	return cwnd
}

// inflight is the flight a phase of gain aims for.
func (b *bbr) inflight(bw, gain float64) uint32 {
	return b.quantizationBudget(b.bdp(bw, gain))
}

func (b *bbr) minTarget() uint32 { return bbrMinTargetPackets * b.mtu }

// boundFloor is the least the congestion bound leaves cwnd: the estimated
// rate times the base RTT, with the hosts' budget.
func (b *bbr) boundFloor(bw float64) uint32 {
	if b.bound == nil || b.bound.baseRTT == 0 {
		return b.minTarget()
	}

	return max(b.minTarget(), b.quantizationBudget(uint32(bw*b.bound.baseRTT.Seconds())+1))
}

// setCwnd: packet conservation in the first round of recovery, the window
// of before once recovery ends; else towards gain times the
// bandwidth-delay product (plus the ACK aggregation and the hosts'
// budget), by the bytes acknowledged, and only up until the pipe is full.
func (b *bbr) setCwnd(e *AckEvent, bw float64) {
	acked := e.Acked
	cwnd, conserving := b.recoverOrRestore(e)
	if !conserving {
		target := b.quantizationBudget(b.bdp(bw, b.cwndGain) + b.aggregationCwnd())
		switch {
		case b.fullBwReached:
			cwnd = min(cwnd+acked, target)
		case cwnd < target || b.delivered < uint64(bbrInitialPackets*b.mtu):
			cwnd += acked
		}
		cwnd = max(cwnd, b.minTarget())
	}
	cwnd = b.bound.limit(cwnd, b.boundFloor(bw))
	if b.mode == bbrProbeRTT {
		cwnd = min(cwnd, b.minTarget())
	}
	b.cwnd = max(cwnd, b.minWindow)
}

// recoverOrRestore applies recovery's entry and exit since the last SACK:
// entry starts a round of packet conservation, exit restores the window
// recovery began with. It returns the window and whether conservation
// holds it.
func (b *bbr) recoverOrRestore(e *AckEvent) (uint32, bool) {
	cwnd := b.cwnd
	if b.rtoExit != 0 && b.delivered >= b.rtoExit {
		b.rtoExit, b.inRecovery, b.recoveryEnded = 0, false, true
	}
	if b.recoveryBegan {
		b.packetConservation = true
		b.nextRoundDelivered = b.delivered // a round from now
		cwnd = e.Inflight + e.Acked
	}
	if b.recoveryEnded && !b.inRecovery {
		cwnd = max(cwnd, b.priorCwnd)
		b.packetConservation = false
	}
	b.recoveryBegan, b.recoveryEnded = false, false
	if b.packetConservation {
		return max(cwnd, e.Inflight+e.Acked), true
	}

	return cwnd, false
}

// saveCwnd keeps the window to restore after recovery or ProbeRTT.
func (b *bbr) saveCwnd() {
	if !b.inRecovery && b.mode != bbrProbeRTT {
		b.priorCwnd = b.cwnd
	} else {
		b.priorCwnd = max(b.priorCwnd, b.cwnd)
	}
}

// OnLoss: the first loss of Fast Recovery saves the window; every loss is
// counted for the next SACK (a probe phase ends on one).
func (b *bbr) OnLoss(e LossEvent) {
	if e.First {
		b.saveCwnd()
		b.inRecovery, b.recoveryBegan = true, true
	}
	b.lost += e.Bytes
	b.bound.onLoss(e, b.mode)
}

// OnRecoveryEnd restores the window at the next SACK.
func (b *bbr) OnRecoveryEnd(time.Time) {
	if b.rtoExit == 0 {
		b.inRecovery = false
	}
	b.recoveryEnded = true
}

// OnRTO takes cwnd to one MTU and restarts full-pipe detection; the window
// comes back once the data in flight now is acknowledged (Linux's Loss
// state).
func (b *bbr) OnRTO(e RTOEvent) {
	b.saveCwnd()
	b.inRecovery, b.recoveryBegan, b.packetConservation = true, false, false
	b.rtoExit = max(b.delivered+uint64(e.Inflight), 1)
	b.fullBw, b.fullBwCount = 0, 0
	b.roundStart = true
	b.cwnd = max(e.MTU, b.minWindow)
	b.bound.onRTO(e)
}

// OnIdleRestart: restarting from idle, pace at the estimate (not above it)
// in ProbeBW, and end a ProbeRTT whose time is up.
func (b *bbr) OnIdleRestart(now time.Time, idle time.Duration) {
	b.idleRestart = true
	b.bound.onIdleRestart(now, idle)
	b.ackEpochStart, b.ackEpochAcked = now, 0
	switch b.mode {
	case bbrProbeBW:
		b.setPacingRate(b.bw.get(), 1)
	case bbrProbeRTT:
		b.checkProbeRTTDone(now)
	}
}

// maxFilter is the largest value of the last window rounds: one entry per
// round that gave a sample, oldest first.
type maxFilter struct {
	entries []maxEntry
}

type maxEntry struct {
	round uint64
	v     float64
}

// update adds a sample of round and forgets rounds older than window.
func (f *maxFilter) update(round uint64, v float64, window uint64) {
	for len(f.entries) > 0 && f.entries[0].round+window <= round {
		f.entries = f.entries[1:]
	}
	if n := len(f.entries); n > 0 && f.entries[n-1].round == round {
		f.entries[n-1].v = max(f.entries[n-1].v, v)

		return
	}
	f.entries = append(f.entries, maxEntry{round, v})
}

// get is the largest value kept, 0 if none.
func (f *maxFilter) get() float64 {
	var m float64
	for _, e := range f.entries {
		m = max(m, e.v)
	}

	return m
}

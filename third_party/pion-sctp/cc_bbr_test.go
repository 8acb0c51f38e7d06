// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestBBR is BBR whose ProbeBW starts in a fixed phase (the one after
// the probe: phase 1, the drain), so that traces repeat.
func newTestBBR() *bbr {
	b := newBBR()
	b.rand = func(int) int { return bbrCycleRand - 1 }

	return b
}

// TestBBRPhases: through a clean 100 Mbit/s, 50 ms path
// with a queue of one bandwidth-delay product, BBR leaves Startup once
// the rate stops growing, drains what Startup queued, cycles ProbeBW's
// pacing gains (1.25, 0.75, then 1) around an estimate of the link's
// rate, and after ten seconds without a lower RTT spends ProbeRTT at four
// packets for at least 200 ms; the link stays full, and in ProbeBW the
// flight stays under twice the bandwidth-delay product.
func TestBBRPhases(t *testing.T) {
	b := newTestBBR()
	s := newCCSim(b, 100, 50*time.Millisecond, 0, 1)
	s.every = 10 * time.Millisecond
	s.run(12 * time.Second)

	link := s.rate
	bdp := uint32(link * 0.05)
	seen := map[string]time.Duration{}
	gains := map[float64]bool{}
	var probeRTT []ccSample
	for _, x := range s.samples {
		if _, ok := seen[x.mode]; !ok {
			seen[x.mode] = x.at
		}
		switch x.mode {
		case "ProbeBW":
			if x.at > 3*time.Second {
				gains[float64(int(x.pace/link/0.99*100+0.5))/100] = true
				assert.LessOrEqual(t, x.inflight, 2*bdp+10*simMTU, "ProbeBW at %v: flight above twice the BDP", x.at)
			}
		case "ProbeRTT":
			probeRTT = append(probeRTT, x)
		}
	}
	require.Contains(t, seen, "Drain", "never drained")
	assert.Less(t, seen["Drain"], 2*time.Second, "Startup lasted past 2 s")
	assert.Greater(t, seen["ProbeBW"], seen["Drain"])
	assert.InDelta(t, link, b.bw.get(), 0.05*link, "bottleneck rate estimate")
	assert.Equal(t, 50*time.Millisecond, b.minRTT.Round(time.Millisecond))
	for _, g := range []float64{1.25, 0.75, 1} {
		assert.True(t, gains[g], "ProbeBW never paced at %v (saw %v)", g, gains)
	}
	require.NotEmpty(t, probeRTT, "no ProbeRTT in 12 s")
	assert.InDelta(t, 10.05, probeRTT[0].at.Seconds(), 0.1, "ProbeRTT 10 s after the minimum RTT was last seen")
	span := probeRTT[len(probeRTT)-1].at - probeRTT[0].at
	assert.GreaterOrEqual(t, span, 190*time.Millisecond, "ProbeRTT held less than 200 ms")
	assert.Less(t, span, 400*time.Millisecond, "ProbeRTT held more than 200 ms and a round trip")
	for _, x := range probeRTT[1:] {
		assert.LessOrEqual(t, x.cwnd, uint32(bbrMinTargetPackets*simMTU), "ProbeRTT's window at %v", x.at)
	}
	assert.Equal(t, "ProbeBW", b.Mode(), "after ProbeRTT")
	assert.Greater(t, s.goodput(2*time.Second, 10*time.Second), 0.95*link, "ProbeBW left the link idle")
}

// TestBBRRandomLoss: BBR does not read random loss as congestion: at 1%
// loss on the same path it still fills the link, where reno with one flow
// and CUBIC carry about what the Mathis formula gives (2.8 Mbit/s).
func TestBBRRandomLoss(t *testing.T) {
	goodput := func(cc CongestionControl) float64 {
		s := newCCSim(cc, 100, 50*time.Millisecond, 0.01, 2)
		s.run(12 * time.Second)

		return s.goodput(2*time.Second, 12*time.Second) * 8 / 1e6
	}
	b, r, c := goodput(newTestBBR()), goodput(newReno()), goodput(newCubic())
	assert.Greater(t, b, 90.0, "bbr at 1%% loss, Mbit/s")
	assert.Less(t, r, 5.0, "reno at 1%% loss, Mbit/s")
	assert.Less(t, c, 8.0, "cubic at 1%% loss, Mbit/s")
}

// bbrInProbeBW runs a BBR through a clean path until it cruises in
// ProbeBW, and returns it and the path.
func bbrInProbeBW(t *testing.T) (*bbr, *ccSim) {
	t.Helper()
	b := newTestBBR()
	s := newCCSim(b, 100, 50*time.Millisecond, 0, 3)
	s.run(3 * time.Second)
	require.Equal(t, "ProbeBW", b.Mode())

	return b, s
}

// ackAt is an AckEvent of n bytes at now with the path's state.
func ackAt(now time.Time, n, inflight uint32, rs RateSample) *AckEvent {
	return &AckEvent{Now: now, Acked: n, CumAdvanced: true, PriorInflight: inflight + n, Inflight: inflight,
		Pending: true, RTT: 50 * time.Millisecond, MinRTT: 50 * time.Millisecond, Rate: rs, MTU: simMTU}
}

// TestBBRRecovery: Fast Recovery's first round conserves packets (cwnd is
// the flight plus what each SACK acknowledges, whatever it was before);
// its end restores the window recovery began with.
func TestBBRRecovery(t *testing.T) {
	b, s := bbrInProbeBW(t)
	before := b.cwnd
	delivered := s.est.delivered
	rs := RateSample{Delivered: 625000, Interval: 50 * time.Millisecond, PriorDelivered: delivered - 600000,
		TotalDelivered: delivered + simMTU, Acked: simMTU}
	b.OnLoss(LossEvent{Now: s.now, Bytes: simMTU, Inflight: 300000, First: true, MTU: simMTU})
	b.OnLoss(LossEvent{Now: s.now, Bytes: simMTU, Inflight: 300000, MTU: simMTU})
	b.OnAck(ackAt(s.now, simMTU, 300000, rs))
	assert.Equal(t, uint32(300000+simMTU), b.cwnd, "conservation: the flight and what the SACK acknowledged")
	assert.True(t, b.packetConservation)
	b.OnAck(ackAt(s.now.Add(time.Millisecond), 2*simMTU, 310000, rs))
	assert.Equal(t, uint32(310000+2*simMTU), b.cwnd, "conservation follows the flight")

	b.OnRecoveryEnd(s.now.Add(60 * time.Millisecond))
	b.OnAck(ackAt(s.now.Add(60*time.Millisecond), simMTU, 310000, rs))
	assert.GreaterOrEqual(t, b.cwnd, before, "recovery's end restores the window it began with")
	assert.False(t, b.packetConservation)
}

// TestBBRTimeout: a T3-rtx timeout takes cwnd to one MTU and restarts the
// detection of a full pipe; SACKs grow cwnd back, and once the data that
// was in flight at the timeout is delivered the window is restored.
func TestBBRTimeout(t *testing.T) {
	b, s := bbrInProbeBW(t)
	before := b.cwnd
	delivered := s.est.delivered
	b.OnRTO(RTOEvent{Now: s.now, Consecutive: 1, Inflight: 600000, MTU: simMTU})
	assert.Equal(t, uint32(simMTU), b.cwnd)
	assert.Zero(t, b.fullBw, "full-pipe detection restarts")
	rs := RateSample{Delivered: 12000, Interval: 50 * time.Millisecond, PriorDelivered: delivered,
		TotalDelivered: delivered + simMTU, Acked: simMTU}
	b.OnAck(ackAt(s.now.Add(time.Second), simMTU, 0, rs))
	assert.Equal(t, uint32(bbrMinTargetPackets*simMTU), b.cwnd, "a SACK after the timeout: cwnd grows, to four packets at least")
	assert.Less(t, b.cwnd, before)
	rs.TotalDelivered = delivered + 600000
	b.OnAck(ackAt(s.now.Add(1100*time.Millisecond), simMTU, 0, rs))
	assert.GreaterOrEqual(t, b.cwnd, before, "restored once the flight at the timeout was delivered")
}

// TestBBRAppLimited: an app-limited sample below the estimate leaves it;
// one above raises it. Through a path where the application offers 20
// Mbit/s of 100, the sender carries what it offers, and the app-limited
// rounds never read as a full pipe (it stays in Startup); once the
// application offers all it can, the estimate climbs to the link's rate
// and BBR moves on to ProbeBW.
func TestBBRAppLimited(t *testing.T) {
	b, s := bbrInProbeBW(t)
	bw := b.bw.get()
	low := RateSample{Delivered: 1000, Interval: 50 * time.Millisecond, AppLimited: true,
		PriorDelivered: b.nextRoundDelivered, TotalDelivered: s.est.delivered, Acked: simMTU}
	b.OnAck(ackAt(s.now, simMTU, 100000, low))
	assert.InDelta(t, bw, b.bw.get(), 1, "a low app-limited sample moved the estimate")
	high := low
	high.Delivered = uint64(2 * bw * 0.05)
	b.OnAck(ackAt(s.now.Add(time.Millisecond), simMTU, 100000, high))
	assert.InDelta(t, 2*bw, b.bw.get(), 0.01*bw, "an app-limited sample above the estimate")

	b = newTestBBR()
	s = newCCSim(b, 100, 50*time.Millisecond, 0, 4)
	s.appLimitedRate = 20e6 / 8
	s.run(3 * time.Second)
	assert.InDelta(t, 20e6/8, s.goodput(time.Second, 3*time.Second), 0.02*20e6/8, "the application's rate")
	assert.Equal(t, "Startup", b.Mode(), "app-limited rounds read as a full pipe")
	s.appLimitedRate = 0
	s.run(3 * time.Second)
	assert.InDelta(t, s.rate, b.bw.get(), 0.05*s.rate, "once it sends all it can")
	assert.Equal(t, "ProbeBW", b.Mode())
}

// TestBBRIdleRestart: restarting from idle in ProbeBW paces at the
// estimate, not above it.
func TestBBRIdleRestart(t *testing.T) {
	b, s := bbrInProbeBW(t)
	b.pacingRate = 2 * b.bw.get()
	b.OnIdleRestart(s.now, time.Second)
	assert.InDelta(t, b.bw.get()*(1-bbrPacingMargin), b.pacingRate, 1)
	assert.True(t, b.idleRestart)
}

// TestBBRStartupPacing: before its first RTT sample BBR paces at Startup's
// gain over its window per RTT; its first window is ten packets.
func TestBBRStartupPacing(t *testing.T) {
	b := newTestBBR()
	b.Start(CCStart{Now: time.Unix(0, 0), MTU: simMTU})
	assert.Equal(t, initialCwnd(simMTU), b.Window())
	assert.InDelta(t, bbrHighGain*float64(b.Window())/0.05, b.PacingRate(50*time.Millisecond), 1)
	assert.Equal(t, "Startup", b.Mode())
}

// TestMaxFilter: the filter keeps the largest sample of the last window
// rounds.
func TestMaxFilter(t *testing.T) {
	var f maxFilter
	f.update(1, 10, 3)
	f.update(1, 5, 3)
	f.update(2, 7, 3)
	assert.Equal(t, 10.0, f.get())
	f.update(3, 6, 3)
	assert.Equal(t, 10.0, f.get())
	f.update(4, 6, 3) // round 1 is out of the window
	assert.Equal(t, 7.0, f.get())
	f.update(10, 1, 3)
	assert.Equal(t, 1.0, f.get())
}

// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestBBRCubic is bbr-cubic whose ProbeBW starts in a fixed phase.
func newTestBBRCubic() *bbr {
	b := newTestBBR()
	b.bound = &bbrBound{}

	return b
}

// boundRounds feeds q rounds round trips of SACKs in mode whose RTT
// samples are rtt, ten a round, each after a flight of prior bytes.
func boundRounds(q *bbrBound, now time.Time, rounds int, rtt time.Duration, mode bbrMode, prior uint32) time.Time {
	for range rounds {
		for i := range 10 {
			q.onAck(&AckEvent{Now: now, Acked: simMTU, Pending: true, RTT: rtt, MTU: simMTU, PriorInflight: prior},
				i == 0, mode, 1<<30)
			now = now.Add(rtt / 10)
		}
	}

	return now
}

// TestBBRBoundTellsLossesApart: a loss while the last round trip's and
// this one's RTTs all stood a quarter of the base RTT above it sets the
// bound at 0.7 of the flight; a loss at an RTT near the base, a loss in
// Startup, and a later loss of the same Fast Recovery change nothing; the
// bound grows back along CUBIC's curve, Fast Recovery or not. The SACKs
// come in Drain, which keeps the full-queue rule (its own test) out.
func TestBBRBoundTellsLossesApart(t *testing.T) {
	const flight = 600 * simMTU
	now := time.Unix(1000, 0)
	q := &bbrBound{}
	now = boundRounds(q, now, 3, 50*time.Millisecond, bbrDrain, flight)
	loss := LossEvent{Now: now, Bytes: simMTU, Inflight: flight, First: true, MTU: simMTU}

	now = boundRounds(q, now, 2, 60*time.Millisecond, bbrDrain, flight) // 10 ms above: under a quarter
	q.onLoss(loss, bbrProbeBW)
	assert.False(t, q.on, "a loss at a queue of 10 ms over a 50 ms base RTT set the bound")
	assert.Equal(t, uint32(5000), q.limit(5000, 100), "no bound, no limit")

	now = boundRounds(q, now, 2, 80*time.Millisecond, bbrDrain, flight) // 30 ms above: a standing queue
	require.False(t, q.on, "a full queue outside ProbeBW set the bound")
	q.onLoss(loss, bbrStartup)
	assert.False(t, q.on, "a loss in Startup set the bound")
	q.onLoss(LossEvent{Now: now, Bytes: simMTU, Inflight: flight, MTU: simMTU}, bbrProbeBW)
	assert.False(t, q.on, "a loss within a Fast Recovery set the bound")
	q.onLoss(loss, bbrProbeBW)
	require.True(t, q.on, "a loss at a standing queue did not set the bound")
	assert.InDelta(t, 0.7*flight, float64(q.win.cwnd), simMTU, "the bound: 0.7 of the flight at the loss")
	assert.Equal(t, q.win.cwnd, q.limit(2*flight, 100), "cwnd under the bound")
	assert.Equal(t, uint32(flight), q.limit(2*flight, flight), "the floor")

	// The bound grows back along the curve, in Fast Recovery too.
	cut := q.win.cwnd
	for range 2000 {
		q.onAck(&AckEvent{Now: now, Acked: simMTU, Pending: true, InRecovery: true, RTT: 80 * time.Millisecond,
			MinRTT: 50 * time.Millisecond, MTU: simMTU}, false, bbrProbeBW, 1<<30)
		now = now.Add(4 * time.Millisecond)
	}
	assert.Greater(t, q.win.cwnd, cut+(flight-cut)/2, "8 s after the cut the bound has not come back half way to the flight it cut")
}

// TestBBRBoundFollowsAFullQueue: in ProbeBW, the first round trip whose
// queue stands as long as the longest seen sets the bound, with no loss,
// at 0.7 of the flight; a full queue that falls below seven tenths of
// that (a loss-based flow backing off) cuts it again, but not within
// bbrCutRounds of the last cut, nor outside ProbeBW (ProbeRTT's own dip).
func TestBBRBoundFollowsAFullQueue(t *testing.T) {
	const flight = 600 * simMTU
	now := time.Unix(1000, 0)
	q := &bbrBound{}
	now = boundRounds(q, now, 3, 50*time.Millisecond, bbrProbeBW, flight)
	require.False(t, q.on, "an empty queue set the bound")

	now = boundRounds(q, now, 2, 80*time.Millisecond, bbrProbeBW, flight)
	require.True(t, q.on, "a full queue in ProbeBW did not set the bound")
	assert.InDelta(t, 0.7*flight, float64(q.win.cwnd), 2*simMTU, "the bound: 0.7 of the flight")

	now = boundRounds(q, now, bbrCutRounds, 80*time.Millisecond, bbrProbeBW, flight)
	before := q.win.cwnd
	now = boundRounds(q, now, 2, 60*time.Millisecond, bbrProbeBW, flight) // the queue falls: 10 ms of 30
	assert.Less(t, q.win.cwnd, before*8/10, "a full queue that fell did not cut the bound")

	// Full again, and falling at once: too soon after the cut.
	now = boundRounds(q, now, 1, 80*time.Millisecond, bbrProbeBW, flight)
	before = q.win.cwnd
	now = boundRounds(q, now, 2, 60*time.Millisecond, bbrProbeBW, flight)
	assert.GreaterOrEqual(t, q.win.cwnd, before, "a dip within %d round trips of a cut cut again", bbrCutRounds)

	// Full for long, then ProbeRTT's dip: no cut.
	now = boundRounds(q, now, 2*bbrCutRounds, 80*time.Millisecond, bbrProbeBW, flight)
	before = q.win.cwnd
	boundRounds(q, now, 2, 60*time.Millisecond, bbrProbeRTT, flight)
	assert.GreaterOrEqual(t, q.win.cwnd, before, "a dip in ProbeRTT cut the bound")
}

// TestBBRCubicSharesWithCubic: through one 100 Mbit/s, 50 ms bottleneck
// with a queue of one bandwidth-delay product, bbr-cubic beside a CUBIC
// flow started with it carries at most 1.3 times CUBIC's rate (the goal
// braid's fairness bench holds the default to) over the 25 s after the
// first 15, where bbr, as BBRv1, carries several times it.
func TestBBRCubicSharesWithCubic(t *testing.T) {
	share := func(b *bbr) (float64, float64) {
		s := newCCSim(b, 100, 50*time.Millisecond, 0, 11)
		c := newCCSim(newCubic(), 100, 50*time.Millisecond, 0, 12)
		runShared(40*time.Second, s, c)
		x, y := s.goodput(15*time.Second, 40*time.Second), c.goodput(15*time.Second, 40*time.Second)
		t.Logf("%s %.1f Mbit/s, cubic %.1f Mbit/s", b.Name(), x*8/1e6, y*8/1e6)
		assert.Greater(t, x+y, 0.9*s.rate, "the two leave the link idle")

		return x, y
	}
	x, y := share(newTestBBRCubic())
	assert.LessOrEqual(t, x, 1.3*y, "bbr-cubic beside CUBIC")
	assert.GreaterOrEqual(t, x, 0.5*y, "bbr-cubic starved beside CUBIC")
	x, y = share(newTestBBR())
	assert.Greater(t, x, 3*y, "bbr, as BBRv1, beside CUBIC: the trace no longer shows what the bound is for")
}

// TestBBRCubicRandomLoss: on a path of its own with 1% random loss
// bbr-cubic fills the link as bbr does: the queue stays near empty, so no
// loss reads as congestion.
func TestBBRCubicRandomLoss(t *testing.T) {
	b := newTestBBRCubic()
	s := newCCSim(b, 100, 50*time.Millisecond, 0.01, 2)
	s.run(12 * time.Second)
	assert.Greater(t, s.goodput(2*time.Second, 12*time.Second)*8/1e6, 90.0, "bbr-cubic at 1%% loss, Mbit/s")
	assert.Equal(t, CCBBRCubic, b.Name())
}

// TestBBRBoundLiftsAtRandomLoss: a loss that begins a Fast Recovery in
// ProbeBW while no queue stands (this round trip and the last within a
// quarter of the base RTT of it) lifts a bound in place; one while the
// queue is between, in Startup, or within a Fast Recovery does not.
func TestBBRBoundLiftsAtRandomLoss(t *testing.T) {
	const flight = 600 * simMTU
	now := time.Unix(1000, 0)
	q := &bbrBound{}
	now = boundRounds(q, now, 3, 50*time.Millisecond, bbrProbeBW, flight)
	now = boundRounds(q, now, 2, 80*time.Millisecond, bbrProbeBW, flight)
	require.True(t, q.on, "a full queue in ProbeBW did not set the bound")
	loss := LossEvent{Now: now, Bytes: simMTU, Inflight: flight, First: true, MTU: simMTU}

	now = boundRounds(q, now, 1, 55*time.Millisecond, bbrProbeBW, flight) // the last at 80 ms, this one at 5 ms above
	q.onLoss(loss, bbrProbeBW)
	assert.True(t, q.on, "a loss as the queue fell lifted the bound")
	now = boundRounds(q, now, 1, 55*time.Millisecond, bbrProbeBW, flight)
	q.onLoss(loss, bbrStartup)
	assert.True(t, q.on, "a loss in Startup lifted the bound")
	q.onLoss(LossEvent{Now: now, Bytes: simMTU, Inflight: flight, MTU: simMTU}, bbrProbeBW)
	assert.True(t, q.on, "a loss within a Fast Recovery lifted the bound")
	q.onLoss(loss, bbrProbeBW)
	assert.False(t, q.on, "a loss with no queue standing did not lift the bound")
	assert.Equal(t, uint32(5000), q.limit(5000, 100), "a lifted bound limits cwnd")
}

// TestBBRCubicRandomLossLiftsBound: on a path of its own with 1%
// random loss, at 50 and 100 ms, bbr-cubic's bound is on for at most
// 1.5 s of the 10 s after the first 2 (the start's, at 100 ms), and off at
// the end. Startup fills the bottleneck's
// queue and Drain empties it, which the bound reads as a loss-based flow
// backing off, and the losses at that queue as congestive: it is set on
// almost every start. Left in place, it kept cwnd at its floor, one
// estimated bandwidth-delay product, which on the bed (RTT noise, lost
// chunks still counted in flight) fell 5-10% short of bbr's rate.
func TestBBRCubicRandomLossLiftsBound(t *testing.T) {
	for _, rtt := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		for seed := uint64(1); seed <= 3; seed++ {
			b := newTestBBRCubic()
			s := newCCSim(b, 100, rtt, 0.01, seed)
			s.run(2 * time.Second)
			on := 0
			for range 100 {
				s.run(100 * time.Millisecond)
				if b.bound.on {
					on++
				}
			}
			assert.LessOrEqual(t, on, 15, "rtt %v seed %d: the bound was on for %d of 100 intervals of 100 ms on a lossy path of its own", rtt, seed, on)
			assert.False(t, b.bound.on, "rtt %v seed %d: the bound was on at the end", rtt, seed)
		}
	}
}

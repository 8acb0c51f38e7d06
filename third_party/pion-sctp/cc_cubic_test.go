// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// cubicAfterLoss is CUBIC in congestion avoidance at w MTUs that has just
// had a congestion event at t0 and left recovery.
func cubicAfterLoss(w uint32, t0 time.Time) *cubic {
	c := newCubic()
	c.Start(CCStart{Now: t0, MTU: simMTU, SSThresh: 1})
	c.cwnd = w * simMTU
	c.OnLoss(LossEvent{Now: t0, Bytes: simMTU, First: true, MTU: simMTU})
	c.OnLoss(LossEvent{Now: t0, Bytes: simMTU, MTU: simMTU}) // the same window: no second cut
	c.OnRecoveryEnd(t0)

	return c
}

// TestCubicCurve: a congestion event at W = 100 packets
// takes cwnd and ssthresh to 0.7 W (RFC 9438 sec 4.6); the window then
// follows W_cubic(t) = C(t-K)^3 + W_max, C = 0.4, with K = cbrt(0.3 W / C)
// = 4.22 s for W in packets: concave up to W_max at K, convex beyond. At
// 100 ms the curve is faster than reno's W_est throughout.
func TestCubicCurve(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := cubicAfterLoss(100, t0)
	assert.Equal(t, uint32(70*simMTU), c.cwnd)
	assert.Equal(t, uint32(70*simMTU), c.ssthresh)
	assert.Equal(t, float64(100*simMTU), c.wMax)

	const cRFC = 0.4 // RFC 9438's C
	k := math.Cbrt(30 / cRFC)
	wCubic := func(t float64) float64 { return (cRFC*math.Pow(t-k, 3) + 100) * simMTU }
	rtt := 100 * time.Millisecond
	checks := map[float64]bool{1: false, k / 2: false, k: false, k + 2: false}
	ackClock(c, rtt, t0, t0.Add(time.Duration((k+2.05)*float64(time.Second))), func(now time.Time) {
		el := now.Sub(t0).Seconds()
		for at, done := range checks {
			if !done && el >= at {
				checks[at] = true
				// cwnd moves to the curve's value an RTT ahead within a
				// round trip, so it tracks W_cubic(t).
				assert.InDelta(t, wCubic(el), float64(c.cwnd), 0.03*wCubic(el), "at %.2f s", el)
			}
		}
	})
	for at, done := range checks {
		assert.True(t, done, "never reached %.2f s", at)
	}
	assert.Greater(t, float64(c.cwnd), float64(100*simMTU), "convex beyond W_max")
}

// TestCubicRenoFriendly: on a short path the curve, which depends on time
// alone, is slower than reno, which grows a packet a round trip; there
// CUBIC follows W_est, which grows alpha = 3(1-0.7)/(1+0.7) = 0.53
// packets a round trip up to W_max and one after.
func TestCubicRenoFriendly(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := cubicAfterLoss(100, t0)
	rtt := time.Millisecond
	ackClock(c, rtt, t0, t0.Add(50*time.Millisecond), nil) // 50 round trips
	want := (70 + 50*3*(1-0.7)/(1+0.7)) * simMTU
	assert.InDelta(t, want, float64(c.cwnd), 2*simMTU, "W_est after 50 round trips")
	assert.Greater(t, float64(c.cwnd), c.wCubic(0.05, simMTU), "above the curve")
}

// TestCubicFastConvergence: a congestion event below the last W_max
// remembers less (0.85 of the window), yielding to newer flows (RFC 9438
// sec 4.7).
func TestCubicFastConvergence(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := cubicAfterLoss(100, t0)
	c.cwnd = 80 * simMTU
	c.OnLoss(LossEvent{Now: t0.Add(time.Second), Bytes: simMTU, First: true, MTU: simMTU})
	assert.InDelta(t, 80*simMTU*(1+cubicBeta)/2, c.wMax, 1)
	assert.Equal(t, uint32(56*simMTU), c.cwnd)
}

// TestCubicTimeout: a timeout is a congestion event too (ssthresh 0.7 of
// the window) and takes cwnd to one MTU; slow start then leads back to
// ssthresh; a second timeout in a row cuts nothing more.
func TestCubicTimeout(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := newCubic()
	c.Start(CCStart{Now: t0, MTU: simMTU, SSThresh: 1})
	c.cwnd = 100 * simMTU
	c.OnRTO(RTOEvent{Now: t0, Consecutive: 1, MTU: simMTU})
	assert.Equal(t, uint32(simMTU), c.cwnd)
	assert.Equal(t, uint32(70*simMTU), c.ssthresh)
	c.OnRTO(RTOEvent{Now: t0.Add(time.Second), Consecutive: 2, MTU: simMTU})
	assert.Equal(t, uint32(70*simMTU), c.ssthresh, "a second timeout in a row")
	c.OnAck(&AckEvent{Now: t0.Add(2 * time.Second), Acked: simMTU, CumAdvanced: true, Pending: true, MTU: simMTU})
	assert.Equal(t, uint32(2*simMTU), c.cwnd, "slow start")
}

// TestCubicIdle: an idle period moves the epoch, so that the curve resumes
// where it stopped.
func TestCubicIdle(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := cubicAfterLoss(100, t0)
	ackClock(c, 100*time.Millisecond, t0, t0.Add(time.Second), nil)
	start := c.epochStart
	c.OnIdleRestart(t0.Add(3*time.Second), 2*time.Second)
	assert.Equal(t, start.Add(2*time.Second), c.epochStart)
}

// TestCubicPath: through a clean 100 Mbit/s, 50 ms path CUBIC fills the
// link, and a loss cuts its window by 0.3, not by half; at 1% random loss
// it carries about what reno does there (the Reno-friendly region), far
// below the link.
func TestCubicPath(t *testing.T) {
	c := newCubic()
	s := newCCSim(c, 100, 50*time.Millisecond, 0, 5)
	s.hyStart = true
	s.run(10 * time.Second)
	assert.Greater(t, s.goodput(2*time.Second, 10*time.Second), 0.95*s.rate)

	lossy := func(cc CongestionControl) float64 {
		s := newCCSim(cc, 100, 50*time.Millisecond, 0.01, 6)
		s.run(20 * time.Second)

		return s.goodput(2*time.Second, 20*time.Second)
	}
	cu, re := lossy(newCubic()), lossy(newReno())
	assert.InDelta(t, re, cu, 0.5*re, "cubic %.0f, reno %.0f B/s at 1%% loss", cu, re)
	assert.Less(t, cu, 0.1*s.rate)
}

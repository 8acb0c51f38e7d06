// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"math"
	"time"
)

// cubic is CUBIC (RFC 9438), Linux's default. After a
// congestion event it remembers the window the event came at (W_max) and
// grows along a cubic curve of the time since: fast while far below
// W_max, flat around it, fast again beyond it, so that the window's
// growth depends on time, not on the RTT. Where the curve is slower than
// what reno would reach in the same time (short RTTs, small windows), it
// follows reno's estimate instead (the Reno-friendly region, W_est). A
// congestion event multiplies the window by 0.7, not 0.5. Slow start is
// reno's (with HyStart++ if SetHyStart, as RFC 9438 recommends), and like
// reno with one flow it neither grows nor cuts again in Fast Recovery.
type cubic struct {
	cwnd, ssthresh uint32
	minWindow      uint32

	wMax       float64   // bytes: the window of the last congestion event
	lastWMax   float64   // the W_max before it (fast convergence)
	k          float64   // seconds from the epoch's start to W_max
	epochStart time.Time // zero: no epoch (the next SACK in congestion avoidance begins one)
	wEst       float64   // bytes: the Reno-friendly estimate
	cwndEpoch  float64   // bytes: cwnd at the epoch's start
	hs         hystart
}

// CUBIC's constants (RFC 9438 sec 4).
const (
	cubicC    = 0.4 // segments per second cubed
	cubicBeta = 0.7
	// cubicAlpha is the Reno-friendly region's additive increase, in
	// segments a round trip, which makes its average window reno's.
	cubicAlpha = 3 * (1 - cubicBeta) / (1 + cubicBeta)
)

var _ CongestionControl = (*cubic)(nil)

func newCubic() *cubic { return &cubic{} }

// Name is "cubic".
func (c *cubic) Name() string { return CCCubic }

// Start sets the initial window (ten packets) and ssthresh.
func (c *cubic) Start(p CCStart) {
	c.minWindow = p.MinWindow
	c.setCwnd(initialCwnd(p.MTU))
	c.ssthresh = p.SSThresh
}

// Window is cwnd.
func (c *cubic) Window() uint32 { return c.cwnd }

// SSThresh is ssthresh.
func (c *cubic) SSThresh() uint32 { return c.ssthresh }

func (c *cubic) hyStart() *hystart { return &c.hs }

// PacingRate paces at 2·cwnd/minRTT in slow start, 1.25· after.
func (c *cubic) PacingRate(minRTT time.Duration) float64 {
	return windowPacingRate(c.cwnd, c.ssthresh, minRTT)
}

func (c *cubic) setCwnd(cwnd uint32) { c.cwnd = max(cwnd, c.minWindow) }

// OnAck slow-starts below ssthresh, else grows along the curve; neither
// in Fast Recovery.
func (c *cubic) OnAck(e *AckEvent) {
	if c.cwnd < c.ssthresh {
		cwnd, end := slowStartGrowth(&c.hs, e, c.cwnd)
		if end {
			c.ssthresh = c.cwnd
		}
		c.setCwnd(cwnd)

		return
	}
	c.hs.inRound = false
	if e.InRecovery || !e.Pending {
		return // RFC 9438 sec 5.8: no growth while cwnd is not used
	}
	c.congestionAvoidance(e)
}

// congestionAvoidance is RFC 9438 sec 4.2-4.4: the window moves towards
// the curve's value an RTT ahead (at most half again as large), or to
// W_est where that is larger.
func (c *cubic) congestionAvoidance(e *AckEvent) {
	mss := float64(e.MTU)
	cwnd := float64(c.cwnd)
	if c.epochStart.IsZero() {
		c.beginEpoch(e.Now, mss)
	}
	t := e.Now.Sub(c.epochStart).Seconds()
	rtt := e.MinRTT // the curve's value an RTT ahead (Linux: the minimum RTT)
	if rtt == 0 {
		rtt = e.RTT
	}
	target := c.wCubic(t+rtt.Seconds(), mss)
	target = min(max(target, cwnd), 1.5*cwnd)

	// W_est grows by alpha segments a round trip; by 1 once it has passed
	// W_max, where reno's rate is what it would be with no event behind it.
	alpha := cubicAlpha
	if c.wEst >= c.wMax {
		alpha = 1
	}
	c.wEst += alpha * mss * float64(e.Acked) / cwnd

	next := cwnd + (target-cwnd)*float64(e.Acked)/cwnd
	if c.wCubic(t, mss) < c.wEst {
		next = max(next, c.wEst) // the Reno-friendly region
	}
	c.setCwnd(uint32(min(next, float64(math.MaxUint32))))
}

// beginEpoch starts the curve at now, from the window now.
func (c *cubic) beginEpoch(now time.Time, mss float64) {
	c.epochStart = now
	c.cwndEpoch = float64(c.cwnd)
	c.wEst = c.cwndEpoch
	if c.wMax <= c.cwndEpoch {
		c.wMax, c.k = c.cwndEpoch, 0 // no event below: the curve starts at its plateau

		return
	}
	c.k = math.Cbrt((c.wMax - c.cwndEpoch) / mss / cubicC)
}

// wCubic is the curve's window t seconds into the epoch, in bytes.
func (c *cubic) wCubic(t, mss float64) float64 {
	d := t - c.k

	return cubicC*mss*d*d*d + c.wMax
}

// OnLoss: the first loss of Fast Recovery is a congestion event (RFC 9438
// sec 4.6): W_max is the window now, less for a flow whose window is
// falling (fast convergence, sec 4.7), and cwnd and ssthresh are 0.7 of
// it; a later loss of the same window changes nothing.
func (c *cubic) OnLoss(e LossEvent) {
	if !e.First {
		return
	}
	c.congestionEvent(e.MTU)
	c.setCwnd(c.ssthresh)
}

func (c *cubic) congestionEvent(mtu uint32) {
	cwnd := float64(c.cwnd)
	if cwnd < c.lastWMax {
		c.wMax = cwnd * (1 + cubicBeta) / 2
	} else {
		c.wMax = cwnd
	}
	c.lastWMax = c.wMax
	c.ssthresh = max(uint32(cwnd*cubicBeta), 4*mtu)
	c.epochStart = time.Time{}
	c.hs.reset()
}

// OnRecoveryEnd changes nothing: the window was cut on entry.
func (c *cubic) OnRecoveryEnd(time.Time) {}

// OnRTO (RFC 9438 sec 4.8): the first timeout in a row is a congestion
// event as a loss is; cwnd goes to one MTU (RFC 9260 sec 7.2.3) and slow
// start leads back to ssthresh, where a new epoch begins.
func (c *cubic) OnRTO(e RTOEvent) {
	if e.Consecutive <= 1 {
		c.congestionEvent(e.MTU)
	}
	c.epochStart = time.Time{}
	c.setCwnd(e.MTU)
}

// OnIdleRestart moves the epoch by the idle time, as Linux does: the curve
// continues from where sending stopped rather than jumping by the time
// nothing was sent.
func (c *cubic) OnIdleRestart(_ time.Time, idle time.Duration) {
	if !c.epochStart.IsZero() && idle > 0 {
		c.epochStart = c.epochStart.Add(idle)
	}
}

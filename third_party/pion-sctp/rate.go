// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import "time"

// Delivery-rate estimation, as Linux's tcp_rate.c and
// draft-cheng-iccrg-delivery-rate-estimation do it, per DATA chunk: each
// transmission (original or retransmission) records how many bytes the
// association had delivered by then, when the last of them was, and when
// the interval it belongs to began; when the chunk is acknowledged, the
// bytes delivered since over the longer of the send and the ack intervals
// is a rate sample. A SACK's sample is that of the most recently sent
// chunk it acknowledges. A sample taken while the sender had no data to
// send (app-limited: the pending queue ran dry with cwnd to spare) says
// what the sender offered, not what the path carries; it is marked so,
// and BBR uses it only if it raises the estimate.

// RateSample is a SACK's delivery-rate sample.
type RateSample struct {
	// Delivered bytes over Interval: the rate. Interval 0: the SACK gave
	// no valid sample (nothing sent since a chunk's state was taken, or an
	// interval shorter than the path's minimum RTT, which can only be an
	// ack for an earlier transmission).
	Delivered uint64
	Interval  time.Duration
	// PriorDelivered is the association's delivered count when the
	// sample's chunk was sent; TotalDelivered its count after the SACK. A
	// round trip ends when a SACK's PriorDelivered reaches the
	// TotalDelivered at its beginning (BBR's rounds).
	PriorDelivered, TotalDelivered uint64
	// AppLimited: the sample's chunk was sent while the sender was short of
	// data.
	AppLimited bool
	// Acked is the bytes the SACK delivered (cumulatively or by gap).
	Acked uint64
}

// Rate is the sample's rate in bytes a second, 0 if it is not valid.
func (s RateSample) Rate() float64 {
	if s.Interval <= 0 {
		return 0
	}

	return float64(s.Delivered) / s.Interval.Seconds()
}

// chunkRate is the rate state a chunk's transmission recorded. Times are
// nanoseconds of the association's clock (rateEstimator.base), so that
// chunks hold no pointers for them.
type chunkRate struct {
	delivered   uint64 // the association's delivered bytes when it was sent
	deliveredAt int64  // when the last of them was delivered
	firstSentAt int64  // when the interval it belongs to began
	appLimited  bool
	valid       bool // recorded and not yet delivered
}

// rateEstimator is the association's delivery-rate state. The caller holds
// the association's lock.
type rateEstimator struct {
	base        time.Time
	delivered   uint64 // bytes delivered (acknowledged once each)
	deliveredAt int64  // when the last were
	firstSentAt int64  // when the current send interval began
	// appLimitedUntil, if not 0, is the delivered count at which the
	// app-limited period ends (the bytes in flight when it began have
	// been delivered).
	appLimitedUntil uint64

	// The SACK being processed: the most recently sent chunk it delivered.
	sample     chunkRate
	sampleSent int64 // that chunk's send time
	acked      uint64
}

func newRateEstimator(now time.Time) rateEstimator { return rateEstimator{base: now} }

// ns is t on the estimator's clock.
func (r *rateEstimator) ns(t time.Time) int64 { return int64(t.Sub(r.base)) }

// onSent records chunk state for a transmission at now; flightEmpty if
// nothing was in flight before it (a new send interval begins).
func (r *rateEstimator) onSent(c *chunkRate, now time.Time, flightEmpty bool) {
	t := r.ns(now)
	if flightEmpty {
		r.firstSentAt, r.deliveredAt = t, t
	}
	*c = chunkRate{delivered: r.delivered, deliveredAt: r.deliveredAt, firstSentAt: r.firstSentAt,
		appLimited: r.appLimitedUntil != 0, valid: true}
}

// onDelivered counts a chunk of n bytes, last sent at sent, acknowledged
// by the SACK being processed, and takes its state for the SACK's sample
// if it is the most recently sent so far.
func (r *rateEstimator) onDelivered(c *chunkRate, n int, sent time.Time) {
	r.delivered += uint64(n) //nolint:gosec // G115
	r.acked += uint64(n)     //nolint:gosec // G115
	if !c.valid {
		return
	}
	t := r.ns(sent)
	if !r.sample.valid || t > r.sampleSent {
		r.sample, r.sampleSent = *c, t
		r.firstSentAt = t // the next interval begins with this send
	}
	c.valid = false
}

// take ends the SACK at now and returns its sample. minRTT is the path's
// smallest RTT (0: unknown).
func (r *rateEstimator) take(now time.Time, minRTT time.Duration) RateSample {
	if r.appLimitedUntil != 0 && r.delivered > r.appLimitedUntil {
		r.appLimitedUntil = 0
	}
	t := r.ns(now)
	if r.acked > 0 {
		r.deliveredAt = t
	}
	s := RateSample{TotalDelivered: r.delivered, Acked: r.acked}
	c := r.sample
	r.sample, r.acked = chunkRate{}, 0
	if !c.valid {
		return s
	}
	s.PriorDelivered, s.AppLimited = c.delivered, c.appLimited
	sendElapsed := time.Duration(r.sampleSent - c.firstSentAt)
	ackElapsed := time.Duration(t - c.deliveredAt)
	interval := max(sendElapsed, ackElapsed)
	if interval <= 0 || interval < minRTT {
		return s
	}
	s.Delivered, s.Interval = r.delivered-c.delivered, interval

	return s
}

// markAppLimited notes that the sender ran out of data with room in cwnd:
// samples of chunks sent until the bytes now in flight are delivered are
// app-limited.
func (r *rateEstimator) markAppLimited(inflight uint32) {
	r.appLimitedUntil = max(r.delivered+uint64(inflight), 1)
}

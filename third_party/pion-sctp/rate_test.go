// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRateEstimator: a sender that sends a chunk of 1000
// bytes every millisecond through a 40 ms path measures 1 MB/s once the
// acks come as fast as the sends; a SACK's sample is its most recently
// sent chunk's; an interval shorter than the path's minimum RTT (an ack
// of an earlier transmission) is no sample; and chunks sent while the
// sender ran out of data are app-limited until the data then in flight is
// delivered.
func TestRateEstimator(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := newRateEstimator(t0)
	chunks := make([]chunkRate, 200)
	sent := func(i int) time.Time { return at(i) }
	inflight := 0
	var last RateSample
	for ms := 0; ms < 200; ms++ {
		if i := ms - 40; i >= 0 { // chunk i's SACK
			r.onDelivered(&chunks[i], 1000, sent(i))
			inflight -= 1000
			last = r.take(at(ms), 40*time.Millisecond)
		}
		r.onSent(&chunks[ms], sent(ms), inflight == 0)
		inflight += 1000
	}
	assert.InDelta(t, 1e6, last.Rate(), 0.01e6, "steady state")
	assert.Equal(t, uint64(160*1000), last.TotalDelivered)
	assert.False(t, last.AppLimited)

	// A SACK of several chunks: the newest sent decides.
	r = newRateEstimator(t0)
	var a, b chunkRate
	r.onSent(&a, at(0), true)
	r.onSent(&b, at(10), false)
	r.onDelivered(&b, 1000, at(10))
	r.onDelivered(&a, 1000, at(0))
	s := r.take(at(50), 0)
	assert.Equal(t, uint64(2000), s.Delivered)
	assert.Equal(t, 50*time.Millisecond, s.Interval, "from the first send to the SACK")
	assert.Equal(t, uint64(0), s.PriorDelivered)

	// Shorter than the minimum RTT: no sample.
	r = newRateEstimator(t0)
	r.onSent(&a, at(0), true)
	r.onDelivered(&a, 1000, at(0))
	assert.Zero(t, r.take(at(5), 40*time.Millisecond).Interval)

	// App-limited: marked while the flight of 3000 bytes is delivered.
	r = newRateEstimator(t0)
	r.delivered = 10000
	r.markAppLimited(3000)
	r.onSent(&a, at(0), false)
	assert.True(t, a.appLimited)
	r.onDelivered(&a, 3000, at(0))
	assert.True(t, r.take(at(40), 0).AppLimited)
	r.onSent(&b, at(41), false)
	assert.True(t, b.appLimited, "13000 delivered: not yet past 13000")
	r.onDelivered(&b, 1000, at(41))
	r.take(at(81), 0)
	var c chunkRate
	r.onSent(&c, at(82), false)
	assert.False(t, c.appLimited, "past the flight the sender ran dry with")
}

// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidHyStart: SACKs whose RTT samples rise by the
// threshold from one round to the next put slow start in CSS, where cwnd
// grows a quarter as fast; samples back below the CSS baseline in a later
// round return it to slow start; five rounds of CSS end slow start; a
// loss or a timeout ends CSS and the rounds; the threshold is an eighth of the last
// round's minimum, within 4 and 16 ms; a retransmitted chunk gives no
// sample; off, nothing changes. The samples come from the chunks' send
// times, through the SACK processing a real SACK takes.
func TestBraidHyStart(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	locked := true
	defer func() {
		if locked {
			a0.lock.Unlock()
		}
	}()
	mtu := a0.MTU()
	atomic.StoreUint32(&a0.mtu, 1200)
	defer atomic.StoreUint32(&a0.mtu, mtu)
	a0.setRWND(1 << 30)
	stream := a0.createStream(7, false)
	send := func(n int) {
		for range n {
			a0.pendingQueue.push(&chunkPayloadData{
				streamIdentifier: 7, stream: stream, userData: make([]byte, 1000),
				beginningFragment: true, endingFragment: true,
			})
		}
		sent, _ := a0.popPendingDataChunksToSend(nil, nil)
		require.Len(t, sent, n)
	}
	// ack sends two more chunks and acknowledges the two oldest with a
	// SACK, the first sent rtt ago, the second rtt2 ago (a retransmission
	// if retx): the flight stays as it is, and a round (from the SACK that
	// begins it to the one that ends it) is half the flight in SACKs.
	ack2 := func(rtt, rtt2 time.Duration, retx bool) {
		for i, d := range []time.Duration{rtt, rtt2} {
			c, ok := a0.inflightQueue.get(a0.cumulativeTSNAckPoint + 1 + uint32(i)) //nolint:gosec // G115
			require.True(t, ok)
			c.since = time.Now().Add(-d)
			if i == 1 && retx {
				c.nSent = 2
			}
		}
		send(2)
		res, err := a0.processAcknowledgement(&chunkSelectiveAck{
			cumulativeTSNAck:               a0.cumulativeTSNAckPoint + 2,
			advertisedReceiverWindowCredit: 1 << 30,
		})
		require.NoError(t, err)
		require.True(t, res.processed)
	}
	ms := func(m int) time.Duration { return time.Duration(m) * time.Millisecond }
	acks := func(n, m int) {
		for range n {
			ack2(ms(m), ms(m), false)
		}
	}
	round := func(ms ...int) { // rounds of 8 SACKs (a flight of 16)
		for _, m := range ms {
			acks(8, m)
		}
	}
	css := func() uint64 { return a0.reno().hs.css.Load() } // (HyStartCSS takes the lock held here)
	slowStart := func() {
		a0.setCWND(1 << 20)
		a0.reno().ssthresh = 1 << 30
		a0.inFastRecovery = false
	}
	// grows reports what a SACK of 2000 bytes adds to cwnd, with data
	// waiting.
	grows := func() uint32 {
		waiting := &chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true}
		a0.pendingQueue.push(waiting)
		defer func() { require.NoError(t, a0.pendingQueue.pop(waiting)) }()
		before := a0.CWND()
		a0.onBytesAcked(2000, true)

		return a0.CWND() - before
	}

	a0.SetHyStart(true)
	slowStart()
	send(16)
	round(50, 50, 52)
	assert.Zero(t, css(), "52 ms after 50: below the threshold (6.25 ms)")
	assert.False(t, a0.reno().hs.inCSS())
	assert.Equal(t, uint32(2000), grows(), "slow start: the bytes acknowledged")
	round(60)
	assert.Equal(t, uint64(1), css(), "60 ms after 52: above 52 + 6.5")
	assert.True(t, a0.reno().hs.inCSS())
	assert.Equal(t, uint32(500), grows(), "CSS: a quarter of the bytes acknowledged")

	round(45)
	assert.False(t, a0.reno().hs.inCSS(), "the RTT fell below the baseline: back to slow start")
	round(60)
	assert.Equal(t, uint64(2), css(), "60 ms after 45: CSS again")
	// (The samples rise a little, or the microseconds the test takes
	// could put a round's minimum below the baseline.)
	round(61, 62, 63, 64)
	assert.Zero(t, a0.reno().hs.exits.Load(), "four rounds of CSS")
	assert.Less(t, a0.CWND(), a0.reno().ssthresh)
	round(65)
	assert.Equal(t, uint64(1), a0.reno().hs.exits.Load(), "five rounds of CSS end slow start")
	assert.Equal(t, a0.CWND()-1, a0.reno().ssthresh, "congestion avoidance")
	assert.False(t, a0.reno().hs.inCSS())

	// In the round CSS began in, a lower sample after it began does not
	// end it: a flight of 24, rounds of 12 SACKs, CSS from the eighth.
	slowStart()
	round(50)
	send(8)
	acks(12, 50)
	n := css()
	acks(8, 60)
	require.Equal(t, n+1, css())
	acks(4, 57)
	assert.True(t, a0.reno().hs.inCSS(), "57 ms in the round CSS began in at 60")
	assert.Equal(t, n+1, css())
	acks(12, 61)
	assert.True(t, a0.reno().hs.inCSS(), "61 ms in the next: not below the baseline of 60")
	acks(12, 50)
	assert.False(t, a0.reno().hs.inCSS(), "50 ms in a later round: a false alarm")
	send(0)

	// A loss in CSS ends it.
	slowStart()
	acks(12, 40)
	acks(12, 50)
	require.True(t, a0.reno().hs.inCSS())
	a0.beginFastRecovery(&chunkPayloadData{})
	assert.False(t, a0.reno().hs.inCSS(), "a loss ends CSS")

	// The threshold: an eighth of 200 ms is 25, above the most (16); an
	// eighth of 10 ms is 1.25, below the least (4).
	slowStart()
	acks(12, 200)
	acks(12, 215)
	acks(12, 230)
	assert.False(t, a0.reno().hs.inCSS(), "230 ms after 215: below 215 + 16")
	acks(12, 248)
	assert.True(t, a0.reno().hs.inCSS(), "248 ms after 230: above 230 + 16")
	a0.beginFastRecovery(&chunkPayloadData{})
	slowStart()
	acks(12, 10)
	acks(12, 13)
	assert.False(t, a0.reno().hs.inCSS(), "13 ms after 10: below 10 + 4")
	acks(12, 18)
	assert.True(t, a0.reno().hs.inCSS(), "18 ms after 13: above 13 + 4")
	a0.beginFastRecovery(&chunkPayloadData{})

	// A retransmitted chunk gives no sample: every SACK acknowledges one
	// sent 70 ms ago and a retransmission sent 1 ms ago.
	slowStart()
	acks(12, 50)
	for range 12 {
		ack2(ms(70), ms(1), true)
	}
	assert.True(t, a0.reno().hs.inCSS(), "70 ms after 50, the retransmissions' 1 ms left out")

	// A timeout ends CSS (the timer handler takes the lock).
	a0.lock.Unlock()
	locked = false
	a0.onRetransmissionTimeout(timerT3RTX, 1)
	a0.lock.Lock()
	locked = true
	assert.False(t, a0.reno().hs.inCSS(), "a timeout ends CSS")

	// Off: the RTT rises and nothing happens.
	a0.SetHyStart(false)
	slowStart()
	n = css()
	acks(12, 50)
	acks(12, 80)
	acks(12, 80)
	assert.Equal(t, n, css(), "off")
	assert.False(t, a0.reno().hs.inCSS())
}

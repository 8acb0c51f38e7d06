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

// TestBraidPacing: paced, a sender whose window is open
// sends a burst's worth of new data, then what the rate gives as time
// passes (while the pace timer is set, in shares of half a burst), never
// more than a burst after a pause; the rate is higher in
// slow start; the pace timer alone, with no SACK, sends the rest; unpaced,
// the window alone decides. The path is made slow (a minimum RTT of 4 s)
// so that the real time the test takes gives the pace almost nothing.
func TestBraidPacing(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	setMinRTT := func(ms float64) {
		a0.rtoMgr.mutex.Lock()
		a0.rtoMgr.minRTT = ms
		a0.rtoMgr.mutex.Unlock()
	}
	a0.lock.Lock()
	mtu := a0.MTU()
	atomic.StoreUint32(&a0.mtu, 1200)
	defer atomic.StoreUint32(&a0.mtu, mtu)
	setMinRTT(4000)
	a0.setRWND(1 << 30)
	stream := a0.createStream(7, false)
	push := func(n int) {
		for range n {
			a0.pendingQueue.push(&chunkPayloadData{
				streamIdentifier: 7, stream: stream, userData: make([]byte, 1000),
				beginningFragment: true, endingFragment: true,
			})
		}
	}
	pop := func() int {
		sent, _ := a0.popPendingDataChunksToSend(nil, nil)

		return len(sent)
	}
	chunk := float64((&chunkPayloadData{userData: make([]byte, 1000)}).chunkSizeInPacket())

	// Congestion avoidance (cwnd not below ssthresh): 1.25 × 200 kB / 4 s
	// = 62.5 kB/s, in bursts of minRTT/16 (above 4 ms): 15625 bytes.
	const cwnd = 200_000
	a0.setCWND(cwnd)
	a0.reno().ssthresh = cwnd
	a0.SetPacing(true)
	push(1)
	assert.Equal(t, 1, pop(), "nothing in flight: the first chunk goes whatever the pace")
	a0.paceAt = time.Time{} // a full burst from here
	push(150)
	burst := 15625 / chunk
	assert.InDelta(t, burst, pop(), 1, "one burst")
	assert.True(t, a0.paceArmed, "a held sender's wakeup is set")
	assert.Equal(t, 0, pop(), "no time has passed: nothing more")
	// While the timer is set, a round (a SACK's, a write's) leaves
	// the tokens to it until they make half a burst (7812.5 bytes).
	a0.paceAt = a0.paceAt.Add(-80 * time.Millisecond)
	assert.Equal(t, 0, pop(), "80 ms of the rate, 5000 bytes: left to the timer")
	a0.paceAt = a0.paceAt.Add(-80 * time.Millisecond)
	assert.InDelta(t, 10000/chunk, pop(), 1, "160 ms of the rate, 10000 bytes")
	// The timer's own round (it has fired) sends what the tokens allow.
	a0.paceArmed = false
	a0.paceAt = a0.paceAt.Add(-80 * time.Millisecond)
	assert.InDelta(t, 5000/chunk, pop(), 1, "80 ms of the rate, the timer fired")
	assert.True(t, a0.paceArmed, "held again, the wakeup is set again")
	a0.paceAt = a0.paceAt.Add(-10 * time.Second)
	assert.InDelta(t, burst, pop(), 1, "after a pause, one burst only")

	// Slow start: gain 2, 100 kB/s, a burst of 25000 bytes.
	a0.reno().ssthresh = 1 << 30
	a0.paceAt = time.Time{}
	assert.InDelta(t, 25_000/chunk, pop(), 1, "slow start's burst")
	a0.reno().ssthresh = cwnd
	require.Positive(t, a0.pendingQueue.size())

	// With a path of 10 ms (25 MB/s) the write loop sends what the pace
	// held though no SACK comes (the bridge is never ticked): the pace
	// timer wakes it.
	setMinRTT(10)
	wakeups := a0.stats.getNumPaceWakeups()
	a0.lock.Unlock()
	drained := assert.Eventually(t, func() bool {
		a0.lock.Lock()
		defer a0.lock.Unlock()

		return a0.pendingQueue.size() == 0
	}, 5*time.Second, time.Millisecond, "what the pace held was sent")
	assert.Greater(t, a0.stats.getNumPaceWakeups(), wakeups, "the pace timer woke the write loop")
	a0.lock.Lock()
	defer a0.lock.Unlock()
	if !drained {
		return
	}

	// Unpaced: the window alone decides.
	a0.SetPacing(false)
	push(30)
	assert.Less(t, a0.inflightQueue.getNumBytes()+30*1000, cwnd, "room in cwnd for all")
	assert.Equal(t, 30, pop(), "all sent at once")
}

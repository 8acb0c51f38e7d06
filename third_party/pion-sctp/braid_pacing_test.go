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

// TestBraidPacing (braid patch 25): paced, a sender whose window is open
// sends a burst's worth of new data, then waits for the time the rate gives
// the next (and its timer wakes the write loop); the rate and so the burst
// are larger in slow start; unpaced, it sends all the window allows at once.
func TestBraidPacing(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	defer a0.lock.Unlock()
	mtu := a0.MTU()
	atomic.StoreUint32(&a0.mtu, 1200)
	defer atomic.StoreUint32(&a0.mtu, mtu)
	a0.rtoMgr.mutex.Lock()
	a0.rtoMgr.minRTT = 100 // ms
	a0.rtoMgr.mutex.Unlock()
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

	// Congestion avoidance: 1.25 × 200 kB / 100 ms = 2.5 MB/s, in bursts
	// of its 6.25 ms (minRTT/16, above 4 ms): 15625 bytes.
	const cwnd = 200_000
	a0.setCWND(cwnd)
	a0.ssthresh = cwnd
	a0.SetPacing(true)
	a0.paceAt = time.Time{}
	push(1)
	require.Equal(t, 1, pop(), "nothing in flight: the first chunk goes whatever the pace")
	a0.paceAt = time.Time{} // a full burst from here
	push(150)
	burst := 15625 / chunk
	n := pop()
	assert.InDelta(t, burst, n, 1, "one burst of the pace")
	assert.True(t, a0.paceArmed, "a held sender's wakeup is set")
	assert.Equal(t, 0, pop(), "no time has passed: nothing more")

	// 4 ms later: 10 kB more.
	a0.paceAt = a0.paceAt.Add(-4 * time.Millisecond)
	assert.InDelta(t, 10_000/chunk, pop(), 1, "4 ms of the rate")

	// The timer wakes the write loop once the wait is over (the write loop
	// then finds the lock held by the test and waits; the flag is set
	// before that).
	a0.lock.Unlock()
	require.Eventually(t, func() bool {
		a0.lock.Lock()
		defer a0.lock.Unlock()

		return !a0.paceArmed
	}, 5*time.Second, time.Millisecond, "the pace timer fired")
	a0.lock.Lock()

	// Slow start: gain 2, 4 MB/s, a burst of 25000 bytes.
	a0.ssthresh = 1 << 30
	a0.paceAt = time.Time{}
	assert.InDelta(t, 25_000/chunk, pop(), 1, "slow start's burst")

	// Unpaced: the window alone decides.
	a0.SetPacing(false)
	inflight := a0.inflightQueue.getNumBytes()
	n = pop()
	assert.Equal(t, 0, a0.pendingQueue.size(), "all sent")
	assert.Less(t, inflight+n*1000, cwnd, "within cwnd")
	assert.Greater(t, n, int(2*burst), "more than a burst")
}

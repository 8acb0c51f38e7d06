// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"sync/atomic"
	"testing"

	"github.com/pion/transport/v5/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidHeldByCwnd: bytes count as held by cwnd when
// data waits and the write loop last stopped at cwnd, however many SACKs
// arrive before it runs again. Judged SACK by SACK from the flight
// before each, when a burst of SACKs came in one read, only the first
// showed a full window, and a sender held by cwnd throughout read as
// held for a third of its bytes, so the tuner added no flows.
func TestBraidHeldByCwnd(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	defer a0.lock.Unlock()
	mtu := a0.MTU()
	atomic.StoreUint32(&a0.mtu, 1200)
	defer atomic.StoreUint32(&a0.mtu, mtu)
	a0.reno().ssthresh = 1 << 30 // slow start, whose growth the counts ignore
	waiting := &chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true}
	a0.pendingQueue.push(waiting) // sent at the end

	held := func(why string, sacks int) uint64 {
		before := a0.TakeCongestionSample()
		for range sacks {
			a0.onCumulativeTSNAckPointAdvanced(2400)
		}
		after := a0.TakeCongestionSample()
		assert.Equal(t, uint64(2400*sacks), after.AckedBytes-before.AckedBytes, why)

		return after.LimitedBytes - before.LimitedBytes
	}

	// A packet in flight, so that the writer sends no window probe. It and
	// the chunk sent at the end stay queued in an association that closes.
	flying := &chunkPayloadData{tsn: a0.myNextTSN - 1, userData: make([]byte, 1200)}
	a0.inflightQueue.pushNoCheck(flying)

	// The write loop stops at cwnd: the chunk does not fit.
	a0.setCWND(2000)
	a0.setRWND(1 << 30)
	chunks, _ := a0.popPendingDataChunksToSend(nil, nil)
	require.Empty(t, chunks)
	a0.setCWND(100 * 1200) // the flight now is nothing like it
	assert.Equal(t, uint64(3*2400), held("held by cwnd", 3), "three SACKs in a row, the writer stopped at cwnd")

	// The write loop stops at the peer's window: not held by cwnd.
	a0.setCWND(100 * 1200)
	a0.setRWND(500)
	chunks, _ = a0.popPendingDataChunksToSend(nil, nil)
	require.Empty(t, chunks)
	assert.Zero(t, held("held by rwnd", 2), "held by the peer's window counted as held by cwnd")

	// Held by cwnd again, then the write loop sends all that waits.
	a0.setCWND(2000)
	a0.setRWND(1 << 30)
	_, _ = a0.popPendingDataChunksToSend(nil, nil)
	require.True(t, a0.heldByCwnd)
	a0.setCWND(100 * 1200)
	chunks, _ = a0.popPendingDataChunksToSend(nil, nil)
	require.Len(t, chunks, 1)
	assert.False(t, a0.heldByCwnd, "a writer that sent all it had still held by cwnd")

	// Held by cwnd, then by Tail Loss Recovery's burst budget.
	a0.pendingQueue.push(&chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true})
	a0.setCWND(2000)
	_, _ = a0.popPendingDataChunksToSend(nil, nil)
	require.True(t, a0.heldByCwnd)
	a0.setCWND(100 * 1200)
	a0.tlrActive = true
	budget, consumed := int64(0), true
	chunks, _ = a0.popPendingDataChunksToSend(&budget, &consumed)
	a0.tlrActive = false
	require.Empty(t, chunks)
	assert.False(t, a0.heldByCwnd, "a writer held by the burst budget counted as held by cwnd")
}

// TestBraidRecoveryKeepsPartialBytes: each loss of a
// window takes one of n flows' share of the bytes counted toward the next
// growth step, so that after k losses (n-k)/n of the count is left; one
// flow (RFC 9260) starts from zero. The count holds no more than cwnd, and
// starts anew once all data is acknowledged.
func TestBraidRecoveryKeepsPartialBytes(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	defer a0.lock.Unlock()
	const cwnd = 100 * 1200
	for flows, want := range map[int][]uint32{
		1:  {0, 0},
		4:  {30000, 20000, 10000, 0, 0},
		16: {37500, 35000, 32500},
	} {
		a0.SetFlows(flows)
		a0.setCWND(cwnd)
		a0.inFastRecovery = false
		a0.reno().partialBytesAcked = 40000
		a0.beginFastRecovery(&chunkPayloadData{})
		assert.True(t, a0.inFastRecovery)
		for k, w := range want {
			if k > 0 {
				a0.recoveryCut() // another flow's loss
			}
			assert.Equal(t, w, a0.reno().partialBytesAcked, "%d flows, after loss %d", flows, k+1)
			assert.Less(t, a0.reno().partialBytesAcked, a0.CWND(), "%d flows, after loss %d", flows, k+1)
		}
		a0.inFastRecovery = false
	}

	// Congestion avoidance with nothing waiting: the count stops at cwnd.
	a0.SetFlows(16)
	a0.setCWND(cwnd)
	a0.reno().ssthresh = 1200
	a0.reno().partialBytesAcked = 0
	flying := &chunkPayloadData{tsn: a0.myNextTSN - 1, userData: make([]byte, 1200)}
	a0.inflightQueue.pushNoCheck(flying)
	for range 3 {
		a0.onCumulativeTSNAckPointAdvanced(cwnd / 2)
	}
	assert.Equal(t, uint32(cwnd), a0.CWND(), "grew with nothing waiting")
	assert.Equal(t, uint32(cwnd), a0.reno().partialBytesAcked, "banked more than cwnd")
	// All data acknowledged: the count starts anew.
	_, ok := a0.inflightQueue.pop(flying.tsn)
	require.True(t, ok)
	a0.onCumulativeTSNAckPointAdvanced(1200)
	assert.Zero(t, a0.reno().partialBytesAcked, "kept a count once all data was acknowledged")
}

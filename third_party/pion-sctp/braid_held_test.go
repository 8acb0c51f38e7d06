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

// TestBraidHeldByCwnd (braid patch 19): bytes count as held by cwnd when
// data waits and the write loop last stopped at cwnd, however many SACKs
// arrive before it runs again. Patch 15 judged each SACK by the flight
// before it; when a burst of SACKs came in one read, only the first
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
	a0.ssthresh = 1 << 30 // slow start: no growth to account for
	waiting := &chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true}
	a0.pendingQueue.push(waiting)
	defer func() { _ = a0.pendingQueue.pop(waiting) }()

	held := func(why string, sacks int) uint64 {
		before := a0.TakeCongestionSample()
		for range sacks {
			a0.onCumulativeTSNAckPointAdvanced(2400)
		}
		after := a0.TakeCongestionSample()
		assert.Equal(t, uint64(2400*sacks), after.AckedBytes-before.AckedBytes, why)

		return after.LimitedBytes - before.LimitedBytes
	}

	// A packet in flight, so that the writer sends no window probe.
	flying := &chunkPayloadData{tsn: 7, userData: make([]byte, 1200)}
	a0.inflightQueue.pushNoCheck(flying)
	defer a0.inflightQueue.pop(flying.tsn)

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
}

// TestBraidRecoveryKeepsPartialBytes (braid patch 19): entering Fast
// Recovery, n flows keep (n-1)/n of the bytes counted toward the next
// window's growth; one flow (RFC 9260) starts from zero.
func TestBraidRecoveryKeepsPartialBytes(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	for flows, want := range map[int]uint32{1: 0, 4: 30000, 16: 37500} {
		a0.lock.Lock()
		a0.SetFlows(flows)
		a0.setCWND(100 * 1200)
		a0.inFastRecovery = false
		a0.partialBytesAcked = 40000
		a0.beginFastRecovery()
		assert.True(t, a0.inFastRecovery)
		assert.Equal(t, want, a0.partialBytesAcked, "%d flows", flows)
		a0.inFastRecovery = false
		a0.lock.Unlock()
	}
}

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

// TestBraidFlows: an association standing for n flows
// grows its window n MTUs a round trip in congestion avoidance, gives up
// 1/(2n) of it for each of the first n losses in a window and 1/n on a
// retransmission timeout (all of it but one MTU on the next, as RFC 9260
// does always); with one flow it is RFC 9260's.
func TestBraidFlows(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.SetFlows(0)
	assert.Equal(t, 1, a0.Flows(), "0 means one")
	a0.SetFlows(1000)
	assert.Equal(t, 64, a0.Flows(), "clamped")

	const cwnd = 100 * 1200
	for _, tc := range []struct {
		flows        int
		grown, timed uint32
		cuts         []uint32 // cwnd after each loss in one window
	}{
		{1, cwnd + 1200, 0, []uint32{cwnd / 2, cwnd / 2}}, // timed out: one MTU
		{4, cwnd + 4*1200, cwnd / 4 * 3, []uint32{cwnd / 8 * 7, cwnd / 8 * 6, cwnd / 8 * 5, cwnd / 2, cwnd / 2}},
	} {
		a0.lock.Lock()
		a0.SetFlows(tc.flows)
		mtu := a0.MTU()
		atomic.StoreUint32(&a0.mtu, 1200)
		a0.setCWND(cwnd)
		a0.setRWND(1 << 30)
		a0.reno().ssthresh = 1200 // congestion avoidance
		a0.reno().partialBytesAcked = 0
		waiting := &chunkPayloadData{userData: make([]byte, 10), beginningFragment: true, endingFragment: true}
		a0.pendingQueue.push(waiting) // the sender waits for cwnd
		a0.heldByCwnd = true          // the writer stopped at cwnd (TestBraidHeldByCwnd)
		before := a0.TakeCongestionSample()
		a0.onCumulativeTSNAckPointAdvanced(cwnd)
		after := a0.TakeCongestionSample()
		assert.Equal(t, tc.grown, a0.CWND(), "%d flows: window after a round trip", tc.flows)
		assert.Equal(t, uint64(cwnd), after.AckedBytes-before.AckedBytes)
		assert.Equal(t, uint64(cwnd), after.LimitedBytes-before.LimitedBytes)
		// A writer that last stopped for want of data was not held by cwnd.
		a0.setCWND(cwnd)
		a0.heldByCwnd = false
		before = a0.TakeCongestionSample()
		a0.onCumulativeTSNAckPointAdvanced(1200)
		after = a0.TakeCongestionSample()
		assert.Equal(t, uint64(0), after.LimitedBytes-before.LimitedBytes, "a writer short of data counted as held by cwnd")

		a0.setCWND(cwnd)
		a0.reno().recoveryCwnd, a0.reno().recoveryCuts, a0.reno().recoveryFlows = cwnd, 0, uint32(tc.flows) //nolint:gosec // G115
		for i, want := range tc.cuts {
			a0.recoveryCut()
			assert.Equal(t, want, a0.CWND(), "%d flows: window after loss %d of a window", tc.flows, i+1)
		}
		// The tuner raising the count during recovery raises no window.
		a0.SetFlows(16)
		a0.setCWND(tc.cuts[0])
		a0.reno().recoveryCuts = 1
		a0.recoveryCut()
		assert.LessOrEqual(t, a0.CWND(), tc.cuts[0], "%d flows: a cut after the count rose", tc.flows)
		a0.SetFlows(tc.flows)
		a0.reno().ssthresh = 1200
		require.NoError(t, a0.pendingQueue.pop(waiting))
		atomic.StoreUint32(&a0.mtu, mtu)
		a0.lock.Unlock()

		// The timeout handler takes the lock itself.
		a0.lock.Lock()
		a0.setCWND(cwnd)
		a0.lock.Unlock()
		a0.onRetransmissionTimeout(timerT3RTX, 1)
		assert.Equal(t, max(tc.timed, a0.MTU()), a0.CWND(), "%d flows: window after a timeout", tc.flows)
		// A second timeout in a row: the path is out, all flows start over.
		a0.onRetransmissionTimeout(timerT3RTX, 2)
		assert.Equal(t, a0.MTU(), a0.CWND(), "%d flows: window after a second timeout", tc.flows)
	}
}

// TestBraidInitialCwnd: ten packets up to 14600 bytes,
// never below RFC 9260's initial window.
func TestBraidInitialCwnd(t *testing.T) {
	for mtu, want := range map[uint32]uint32{1200: 12000, 1452: 14520, 1500: 14600, 8192: 16384, 65507: 131014} {
		assert.Equal(t, want, initialCwnd(mtu), "MTU %d", mtu)
	}
}

// TestBraidBothSidesSlowStart: the side that answered the
// INIT starts in slow start as the side that sent it does, with ssthresh
// at the window the peer advertised. Left at zero it sent its first bytes
// in congestion avoidance, one MTU more a round trip.
func TestBraidBothSidesSlowStart(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	for _, a := range []*Association{a0, a1} {
		a.lock.RLock()
		ssthresh, rwnd, cwnd := a.reno().ssthresh, a.RWND(), a.CWND()
		a.lock.RUnlock()
		assert.Positive(t, rwnd, a.name)
		assert.Equal(t, rwnd, ssthresh, "%s: ssthresh is the peer's window", a.name)
		assert.Less(t, cwnd, ssthresh, "%s: in slow start", a.name)
	}
}

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

// TestBraidGapAcksGrowCwnd: in congestion avoidance the
// bytes a SACK acknowledges by gap blocks count toward growth though the
// cumulative TSN stays put (RFC 9260 sec 7.2.2), and in Fast Recovery an
// association of several flows keeps growing: pion counted bytes only on
// SACKs that moved the cumulative TSN, which a hole holds back for a round
// trip, and took cwnd equal to ssthresh, as every cut leaves it, for slow
// start, which recovery stops. At 1% loss an association of 16 flows is in
// recovery nearly always, and its window stayed near half of 16 flows'.
func TestBraidGapAcksGrowCwnd(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	defer a0.lock.Unlock()
	mtu := a0.MTU()
	atomic.StoreUint32(&a0.mtu, 1200)
	defer atomic.StoreUint32(&a0.mtu, mtu)
	a0.setRWND(1 << 30)
	waiting := &chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true}
	a0.pendingQueue.push(waiting) // data waits: cwnd may grow

	// n chunks of 1200 bytes in flight after the cumulative TSN; a SACK
	// that leaves the first missing and acknowledges the others by a gap
	// block, as after a loss.
	const n = 120
	stream := a0.createStream(7, false)
	gapSACK := func() *chunkSelectiveAck {
		a0.inflightQueue = newPayloadQueue()
		a0.cumulativeTSNAckPoint = a0.myNextTSN - 1
		for i := range uint32(n) {
			a0.inflightQueue.pushNoCheck(&chunkPayloadData{tsn: a0.myNextTSN + i, userData: make([]byte, 1200), nSent: 1, stream: stream})
		}
		a0.myNextTSN += n

		return &chunkSelectiveAck{
			cumulativeTSNAck:               a0.cumulativeTSNAckPoint,
			advertisedReceiverWindowCredit: 1 << 30,
			gapAckBlocks:                   []gapAckBlock{{start: 2, end: n}},
		}
	}

	for _, c := range []struct {
		name     string
		flows    int
		recovery bool
		grows    uint32 // MTUs
	}{
		{"one flow, congestion avoidance", 1, false, 1},
		{"one flow, Fast Recovery", 1, true, 0},
		{"16 flows, congestion avoidance", 16, false, 16},
		{"16 flows, Fast Recovery", 16, true, 15}, // one flow lost a packet
	} {
		a0.SetFlows(c.flows)
		a0.inFastRecovery = false
		a0.reno().partialBytesAcked = 0
		a0.setCWND(100 * 1200)
		a0.reno().ssthresh = 50 * 1200
		if c.recovery {
			a0.beginFastRecovery(&chunkPayloadData{}) // cwnd = ssthresh
		}
		before := a0.CWND()
		res, err := a0.processAcknowledgement(gapSACK())
		require.NoError(t, err, c.name)
		assert.False(t, res.cumTSNAckPointAdvanced, c.name)
		assert.Equal(t, before+c.grows*1200, a0.CWND(), c.name)
	}

	// A second loss in the same recovery takes one more flow's share of
	// the window recovery began with, from the window as it has grown.
	grown := a0.CWND()
	a0.recoveryCut()
	assert.Equal(t, grown-100*1200/32, a0.CWND(), "a second cut kept the growth")
	assert.Equal(t, a0.CWND(), a0.reno().ssthresh)

	// In slow start a SACK that leaves the cumulative TSN grows nothing.
	a0.inFastRecovery = false
	a0.setCWND(20 * 1200)
	a0.reno().ssthresh = 1 << 30
	_, err = a0.processAcknowledgement(gapSACK())
	require.NoError(t, err)
	assert.Equal(t, uint32(20*1200), a0.CWND(), "slow start grew on a gap-only SACK")
}

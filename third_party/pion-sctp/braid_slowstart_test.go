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

// TestBraidSlowStartFlight (braid patch 21): in slow start a SACK grows cwnd
// when data waits, or when the flight before it was more than half of
// cwnd; a sender whose flight was not does not grow it.
func TestBraidSlowStartFlight(t *testing.T) {
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
	stream := a0.createStream(7, false)

	const cwnd = 20 * 1200
	for _, c := range []struct {
		name     string
		inflight uint32 // chunks of 1200 bytes, two of them acknowledged
		waiting  bool
		grows    uint32
	}{
		{"flight of cwnd, nothing waits", 20, false, 2400},
		{"flight over half cwnd, nothing waits", 11, false, 2400},
		{"flight of half cwnd, nothing waits", 10, false, 0},
		{"flight under half cwnd, data waits", 4, true, 2400},
	} {
		a0.inFastRecovery = false
		a0.setCWND(cwnd)
		a0.ssthresh = 1 << 30
		a0.inflightQueue = newPayloadQueue()
		a0.cumulativeTSNAckPoint = a0.myNextTSN - 1
		for i := range c.inflight {
			a0.inflightQueue.pushNoCheck(&chunkPayloadData{tsn: a0.myNextTSN + i, userData: make([]byte, 1200), nSent: 1, stream: stream})
		}
		a0.myNextTSN += c.inflight
		waiting := &chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true}
		if c.waiting {
			a0.pendingQueue.push(waiting)
		}
		res, err := a0.processAcknowledgement(&chunkSelectiveAck{
			cumulativeTSNAck:               a0.cumulativeTSNAckPoint + 2,
			advertisedReceiverWindowCredit: 1 << 30,
		})
		require.NoError(t, err, c.name)
		assert.True(t, res.cumTSNAckPointAdvanced, c.name)
		assert.Equal(t, cwnd+c.grows, a0.CWND(), c.name)
		if c.waiting {
			require.NoError(t, a0.pendingQueue.pop(waiting))
		}
	}
}

// TestBraidImmediateSack (braid patch 22): the chunk that empties the
// pending queue carries the I bit, and only that one; a round that leaves
// data waiting sets none.
func TestBraidImmediateSack(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	defer a0.lock.Unlock()
	a0.setRWND(1 << 30)
	stream := a0.createStream(7, false)
	push := func(n int) []*chunkPayloadData {
		var cs []*chunkPayloadData
		for i := range n {
			c := &chunkPayloadData{
				streamIdentifier: 7, stream: stream, userData: make([]byte, 1000),
				beginningFragment: i == 0, endingFragment: i == n-1,
			}
			a0.pendingQueue.push(c)
			cs = append(cs, c)
		}

		return cs
	}

	a0.setCWND(1 << 20)
	sent, _ := a0.popPendingDataChunksToSend(nil, nil)
	require.Empty(t, sent)
	cs := push(5)
	sent, _ = a0.popPendingDataChunksToSend(nil, nil)
	require.Len(t, sent, 5)
	for i, c := range cs {
		assert.Equal(t, i == 4, c.immediateSack, "chunk %d of a round that empties the queue", i)
	}
	p := &chunkPayloadData{}
	require.NoError(t, p.unmarshal(cs[4].appendTo(nil)))
	assert.True(t, p.immediateSack, "the I bit on the wire")

	// cwnd holds back the last chunk: no I bit.
	a0.setCWND(uint32(a0.inflightQueue.getNumBytes() + 2500)) //nolint:gosec // G115
	cs = push(3)
	sent, _ = a0.popPendingDataChunksToSend(nil, nil)
	require.Len(t, sent, 2)
	for i, c := range cs {
		assert.False(t, c.immediateSack, "chunk %d of a round that leaves data waiting", i)
	}
}

// TestBraidInitialFlowsWindow (braid patch 23): an association set to n
// flows before its first DATA chunk starts with n initial windows; set
// after it, the count leaves cwnd alone.
func TestBraidInitialFlowsWindow(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)

	a0.lock.Lock()
	defer a0.lock.Unlock()
	a0.setRWND(1 << 30)
	iw := initialCwnd(a0.MTU())
	require.Equal(t, iw, a0.CWND())
	stream := a0.createStream(7, false)
	send := func() {
		a0.pendingQueue.push(&chunkPayloadData{
			streamIdentifier: 7, stream: stream, userData: make([]byte, 1000),
			beginningFragment: true, endingFragment: true,
		})
		sent, _ := a0.popPendingDataChunksToSend(nil, nil)
		require.Len(t, sent, 1)
	}

	a0.SetFlows(4)
	send()
	assert.Equal(t, 4*iw, a0.CWND(), "four flows' initial windows")
	a0.SetFlows(16)
	send()
	assert.Equal(t, 4*iw, a0.CWND(), "a count set after the first DATA")
}

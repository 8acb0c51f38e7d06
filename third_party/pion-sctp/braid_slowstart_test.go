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

// TestBraidSlowStartFlight: in slow start a SACK grows cwnd
// when data waits, or when the round's flight was more than half of cwnd.
// A sender that sends a full window and then waits doubles it in the round
// trip, as a TCP sender does; one whose round's flight was small does not
// grow it.
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
	a0.reno().ssthresh = 1 << 30
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
	// ack acknowledges the oldest n chunks in flight, as one SACK would.
	ack := func(n int) {
		acked := 0
		for range n {
			c, ok := a0.inflightQueue.pop(a0.cumulativeTSNAckPoint + 1)
			require.True(t, ok)
			a0.cumulativeTSNAckPoint++
			acked += len(c.userData)
		}
		a0.onCumulativeTSNAckPointAdvanced(acked)
	}

	const cwnd = 20 * 1000
	a0.setCWND(cwnd)
	send(20)
	for range 10 {
		ack(2)
	}
	assert.Equal(t, uint32(2*cwnd), a0.CWND(), "a full window, nothing waiting: doubled in the round")

	// The next round's flight is under half of cwnd.
	send(4)
	ack(2)
	assert.Equal(t, uint32(2*cwnd), a0.CWND(), "a round of a small flight grew cwnd")

	// Data waits: it grows whatever the flight.
	waiting := &chunkPayloadData{userData: make([]byte, 1000), beginningFragment: true, endingFragment: true}
	a0.pendingQueue.push(waiting)
	ack(2)
	assert.Equal(t, uint32(2*cwnd+2000), a0.CWND(), "data waiting")
	require.NoError(t, a0.pendingQueue.pop(waiting))
}

// TestBraidImmediateSack: the chunk that empties the
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

// TestBraidInitialFlowsWindow: an association set to n
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

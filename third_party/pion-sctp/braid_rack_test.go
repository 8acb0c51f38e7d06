// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidRACKLostRetransmission: RACK judges a
// retransmission as it judges an original, by when it was last sent. When
// a chunk sent after it is delivered (beyond the reordering window), the
// retransmission is lost and is sent again, rather than waiting for T3-rtx
// (at least a second): after a slow start that overshot the queue, a lost
// retransmission held a worker's results for a second.
func TestBraidRACKLostRetransmission(t *testing.T) {
	now := time.Now()
	for _, byTimer := range []bool{false, true} {
		resent := mkChunk(100, now.Add(-50*time.Millisecond)) // its retransmission left 50 ms ago
		resent.nSent = 2
		later := mkChunk(101, now.Add(-1*time.Millisecond))
		assoc := newRackPair(t, resent, later)
		if byTimer {
			assoc.lock.Lock()
			assoc.rackDeliveredTime = later.since
			assoc.lock.Unlock()
			assoc.onRackTimeout()
		} else {
			assoc.lock.Lock()
			assoc.onRackAfterSACK(true, later.since, 101, &chunkSelectiveAck{})
			assoc.lock.Unlock()
		}
		assoc.lock.Lock()
		assert.True(t, resent.retransmit, "timer %v: a lost retransmission is marked for sending again", byTimer)
		assoc.lock.Unlock()
	}

	// A retransmission sent after the delivered chunk may still be on
	// its way: it stays, as an original would.
	delivered := mkChunk(100, now.Add(-50*time.Millisecond))
	resent := mkChunk(101, now.Add(-1*time.Millisecond))
	resent.nSent = 2
	assoc := newRackPair(t, delivered, resent)
	// The SACK pass arms the PTO timer, whose goroutine marks the newest
	// chunk in flight for a probe once it fires: the pass and the look
	// at the chunk hold the lock, as the association's own callers do, so
	// that the look sees what the pass did and not the probe.
	assoc.lock.Lock()
	defer assoc.lock.Unlock()
	assoc.onRackAfterSACK(true, delivered.since, 100, &chunkSelectiveAck{})
	assert.False(t, resent.retransmit, "a retransmission newer than what was delivered is not lost")
}

// newRackPair is an association with chunks older and newer in flight and
// in RACK's xmit-time list, a minimum RTT of 40 ms and a reordering window
// of 10 ms.
func newRackPair(t *testing.T, older, newer *chunkPayloadData) *Association {
	t.Helper()
	assoc := newRackTestAssoc(t)
	assoc.lock.Lock()
	defer assoc.lock.Unlock()
	assoc.rackMinRTT = 40 * time.Millisecond
	assoc.rackReoWnd = 10 * time.Millisecond
	for _, c := range []*chunkPayloadData{older, newer} {
		assoc.inflightQueue.pushNoCheck(c)
		assoc.rackInsert(c)
	}

	return assoc
}

// TestBraidRACKAckedTooSoon: a SACK for a retransmitted
// chunk that comes sooner than the minimum RTT after the retransmission
// left acknowledges an earlier transmission, and does not move RACK's
// delivered time (RFC 8985 sec 6.2 step 2).
func TestBraidRACKAckedTooSoon(t *testing.T) {
	assoc := newRackTestAssoc(t)
	assoc.rackMinRTT = 40 * time.Millisecond
	now := time.Now()

	c := mkChunk(100, now.Add(-5*time.Millisecond))
	assert.False(t, assoc.rackAckedTooSoon(c, now), "an original transmission")
	c.nSent = 2
	assert.True(t, assoc.rackAckedTooSoon(c, now), "a retransmission 5 ms before, min RTT 40 ms")
	c.since = now.Add(-50 * time.Millisecond)
	assert.False(t, assoc.rackAckedTooSoon(c, now), "a retransmission 50 ms before")
	assoc.rackMinRTT = 0
	c.since = now
	assert.False(t, assoc.rackAckedTooSoon(c, now), "no RTT measured yet")

	// Through a SACK, by its cumulative ack and by a gap block: a
	// retransmission SACKed 1 ms after it left gives no delivered time;
	// one SACKed 50 ms after does.
	for _, gap := range []bool{false, true} {
		for _, age := range []time.Duration{time.Millisecond, 50 * time.Millisecond} {
			assoc := newRackTestAssoc(t)
			assoc.lock.Lock()
			assoc.rackMinRTT = 40 * time.Millisecond
			sent := time.Now().Add(-age)
			first, resent := mkChunk(100, sent), mkChunk(101, sent)
			first.nSent, resent.nSent = 2, 2
			assoc.inflightQueue.pushNoCheck(first)
			assoc.inflightQueue.pushNoCheck(resent)
			sack := &chunkSelectiveAck{cumulativeTSNAck: 101, advertisedReceiverWindowCredit: 1 << 20}
			if gap {
				sack = &chunkSelectiveAck{
					cumulativeTSNAck:               99,
					advertisedReceiverWindowCredit: 1 << 20,
					gapAckBlocks:                   []gapAckBlock{{start: 1, end: 2}},
				}
			}
			_, _, when, _, found, err := assoc.processSelectiveAck(sack)
			assoc.lock.Unlock()
			require.NoError(t, err)
			if age < assoc.rackMinRTT {
				assert.False(t, found, "gap %v: a retransmission SACKed %v after it left", gap, age)
			} else {
				assert.True(t, found, "gap %v: a retransmission SACKed %v after it left", gap, age)
				assert.Equal(t, sent, when)
			}
		}
	}
}

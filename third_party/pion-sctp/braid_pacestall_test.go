// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidPaceStall: a paced sender whose wakeup came
// later than a quarter of the minimum RTT (the host did not run it) marks
// its delivery-rate samples app-limited until the data then in flight is
// delivered; a wakeup on time, or one that was never set, marks nothing.
func TestBraidPaceStall(t *testing.T) {
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
	require.NoError(t, err)
	defer closeAssociationPair(br, a0, a1)
	a0.lock.Lock()
	defer a0.lock.Unlock()
	a0.rtoMgr.mutex.Lock()
	a0.rtoMgr.minRTT = 40 // ms: a stall is over 10 ms late
	a0.rtoMgr.mutex.Unlock()
	a0.SetPacing(true)
	waiting := &chunkPayloadData{streamIdentifier: 1, userData: make([]byte, 100),
		beginningFragment: true, endingFragment: true}
	a0.pendingQueue.push(waiting) // data waits
	defer func() { require.NoError(t, a0.pendingQueue.pop(waiting)) }()

	for _, tc := range []struct {
		name  string
		late  time.Duration
		stall bool
	}{
		{"on time", 2 * time.Millisecond, false},
		{"20 ms late", 20 * time.Millisecond, true},
	} {
		a0.rate.appLimitedUntil = 0
		stalls := a0.stats.getNumPaceStalls()
		a0.paceArmed, a0.paceDue = false, time.Now().Add(-tc.late)
		a0.paceRefill()
		assert.Equal(t, tc.stall, a0.rate.appLimitedUntil != 0, tc.name)
		assert.Equal(t, tc.stall, a0.stats.getNumPaceStalls() > stalls, tc.name)
		assert.True(t, a0.paceDue.IsZero(), "%s: the wakeup was seen", tc.name)
	}
	a0.rate.appLimitedUntil = 0
	a0.paceArmed, a0.paceDue = false, time.Time{}
	a0.paceRefill()
	assert.Zero(t, a0.rate.appLimitedUntil, "no wakeup set")
}

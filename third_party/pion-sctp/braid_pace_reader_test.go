// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidPaceOnReader follows a paced sender's pace through the read
// loop's hook (beforeReaderWait), as a lingering reader calls it: a round
// the hook runs before a linger leaves the pace's wakeup to the reader
// (no timer), which the hook returns; the reader's calls before the pace
// is due send nothing and keep it; its first call after sends what the
// tokens allow, as the timer's round would, and holds the pace again; a
// call before the reader waits for input (until zero), and the read loop's
// end, give the wakeup back to the timer for the time left.
func TestBraidPaceOnReader(t *testing.T) {
	conn := &recordConn{done: make(chan struct{})}
	defer conn.Close() // nolint:errcheck
	cfg := Config{NetConn: conn, LoggerFactory: logging.NewDefaultLoggerFactory()}
	cfg.applyDefaults()
	a, err := createAssociationFromConfig(&cfg)
	require.NoError(t, err)
	a.setState(established)
	a.rounds.on.Store(true)

	// Congestion avoidance on a path of 4 s: 62.5 kB/s in bursts of
	// 15625 bytes; the pace waits for half a burst, 125 ms of the rate.
	a.lock.Lock()
	atomic.StoreUint32(&a.mtu, 1200)
	a.rtoMgr.mutex.Lock()
	a.rtoMgr.minRTT = 4000
	a.rtoMgr.mutex.Unlock()
	a.setRWND(1 << 30)
	const cwnd = 200_000
	a.setCWND(cwnd)
	a.reno().ssthresh = cwnd
	a.SetPacing(true)
	stream := a.createStream(7, false)
	for range 200 {
		a.pendingQueue.push(&chunkPayloadData{
			streamIdentifier: 7, stream: stream, userData: make([]byte, 1000),
			beginningFragment: true, endingFragment: true,
		})
	}
	a.lock.Unlock()
	chunk := float64((&chunkPayloadData{userData: make([]byte, 1000)}).chunkSizeInPacket())
	sent := func() int {
		a.lock.RLock()
		defer a.lock.RUnlock()

		return a.inflightQueue.size()
	}
	timerSet := func() bool { return a.paceTimer.Stop() }
	linger := func() time.Time { return time.Now().Add(2 * time.Millisecond) }

	// A SACK's round before a linger: a burst goes, the pace is the reader's.
	a.rounds.due.Store(true)
	due := a.beforeReaderWait(linger())
	assert.InDelta(t, 15625/chunk, sent(), 1, "a burst")
	a.lock.Lock()
	assert.True(t, a.paceArmed && a.paceByReader, "the reader holds the pace")
	assert.Equal(t, a.paceDue, due, "the hook returns the pace's time")
	a.lock.Unlock()
	assert.InDelta(t, 125*time.Millisecond, time.Until(due), float64(10*time.Millisecond), "half a burst's time")
	assert.False(t, timerSet(), "no timer")

	// Called again before the pace is due, lingering: nothing, and it keeps it.
	assert.Equal(t, due, a.beforeReaderWait(linger()), "still the reader's")
	assert.InDelta(t, 15625/chunk, sent(), 1, "nothing more")
	assert.False(t, timerSet(), "no timer")

	// Due (the tokens and the time moved on, as 160 ms would): the
	// reader's call is the timer's round, and it holds the next.
	n, wakeups := sent(), a.stats.getNumPaceWakeups()
	a.lock.Lock()
	a.paceAt = a.paceAt.Add(-160 * time.Millisecond)
	a.paceDue = time.Now().Add(-time.Millisecond)
	a.lock.Unlock()
	due = a.beforeReaderWait(linger())
	assert.InDelta(t, 10000/chunk, sent()-n, 1, "160 ms of the rate, 10000 bytes")
	assert.Equal(t, wakeups+1, a.stats.getNumPaceWakeups(), "counted as the pace's wakeup")
	assert.False(t, due.IsZero(), "held again, by the reader")
	assert.False(t, timerSet(), "no timer")

	// About to wait for input: the timer takes it.
	assert.True(t, a.beforeReaderWait(time.Time{}).IsZero(), "nothing for the reader")
	a.lock.Lock()
	assert.True(t, a.paceArmed && !a.paceByReader, "the timer holds the pace")
	a.lock.Unlock()
	assert.True(t, timerSet(), "the timer is set")

	// The read loop's end does the same.
	a.lock.Lock()
	a.paceByReader = true
	a.lock.Unlock()
	a.endInlineRounds()
	a.lock.Lock()
	assert.False(t, a.paceByReader, "the read loop's end took it")
	a.lock.Unlock()
	assert.True(t, timerSet(), "the timer is set")

	// A round the write loop runs (no reader's until) sets the timer; the
	// reader, lingering, takes it over (or each timer's round would set
	// the next timer); waiting for input, it leaves it.
	a.lock.Lock()
	a.paceArmed = false
	a.lock.Unlock()
	a.rounds.due.Store(true)
	a.runDeferredRound()
	a.lock.Lock()
	assert.True(t, a.paceArmed && !a.paceByReader, "not before a linger: the timer's")
	due = a.paceDue
	a.lock.Unlock()
	assert.True(t, a.beforeReaderWait(time.Time{}).IsZero(), "not lingering: nothing for the reader")
	assert.Equal(t, due, a.beforeReaderWait(linger()), "lingering: the reader takes the pace")
	a.lock.Lock()
	assert.True(t, a.paceArmed && a.paceByReader, "the reader holds the pace")
	a.lock.Unlock()
	assert.False(t, timerSet(), "the timer was stopped")
	// A timer that has fired (its round is the write loop's) stays so.
	a.lock.Lock()
	a.paceByReader, a.paceArmed = false, true
	a.lock.Unlock()
	assert.True(t, a.beforeReaderWait(linger()).IsZero(), "the timer had fired: not the reader's")
}

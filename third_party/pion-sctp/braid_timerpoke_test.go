// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidTimerPoke: setting the PTO or RACK deadline wakes the timer
// goroutine only when its timer is not armed or fires after the new
// deadline; clearing one never does. And with the goroutine running, a
// deadline moved later without a wakeup still fires, at its new time.
func TestBraidTimerPoke(t *testing.T) {
	conn := &recordConn{done: make(chan struct{})}
	defer conn.Close() // nolint:errcheck
	cfg := Config{NetConn: conn, LoggerFactory: logging.NewDefaultLoggerFactory()}
	cfg.applyDefaults()
	a, err := createAssociationFromConfig(&cfg)
	require.NoError(t, err)
	poked := func() bool {
		select {
		case <-a.timerUpdateCh:
			return true
		default:
			return false
		}
	}

	a.startPTOTimer(time.Second)
	assert.True(t, poked(), "not armed: woken")
	a.timerMu.Lock()
	a.timerArmedAt = time.Now().Add(500 * time.Millisecond)
	a.timerMu.Unlock()
	a.startPTOTimer(time.Second)
	assert.False(t, poked(), "later than the timer fires: not woken")
	a.startRackTimer(time.Second)
	assert.False(t, poked(), "RACK, later: not woken")
	a.startPTOTimer(100 * time.Millisecond)
	assert.True(t, poked(), "earlier than the timer fires: woken")
	a.stopPTOTimer()
	a.stopRackTimer()
	assert.False(t, poked(), "cleared: not woken")

	// The goroutine running: it arms for the PTO deadline; moved later
	// without a wakeup, the deadline stays until its time, then fires
	// (onPTOTimer clears nothing here: it is cleared before it fires).
	a.timerMu.Lock()
	a.timerArmedAt = time.Time{}
	a.timerMu.Unlock()
	go a.timerLoop()
	defer a.closeWriteLoopOnce.Do(func() { close(a.closeWriteLoopCh) })
	a.startPTOTimer(20 * time.Millisecond)
	require.Eventually(t, func() bool {
		a.timerMu.Lock()
		defer a.timerMu.Unlock()

		return !a.timerArmedAt.IsZero()
	}, 10*time.Second, time.Millisecond, "the goroutine armed its timer")
	a.startPTOTimer(150 * time.Millisecond)
	assert.False(t, poked(), "moved later: not woken")
	moved := time.Now()
	a.timerMu.Lock()
	due := a.ptoDeadline
	a.timerMu.Unlock()
	require.Eventually(t, func() bool {
		a.timerMu.Lock()
		defer a.timerMu.Unlock()

		return a.ptoDeadline.IsZero()
	}, 10*time.Second, time.Millisecond, "the moved deadline fired")
	assert.False(t, time.Now().Before(due), "not before its time")
	assert.GreaterOrEqual(t, time.Since(moved), 100*time.Millisecond)
}

// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"context"
	"testing"

	"github.com/pion/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidPaceHeldWriteNoWake: new DATA wakes the write loop, unless the
// pace holds the sender: then its pace timer, which is set, wakes it, and
// a round now would find no tokens.
func TestBraidPaceHeldWriteNoWake(t *testing.T) {
	conn := &recordConn{done: make(chan struct{})}
	defer conn.Close() // nolint:errcheck
	cfg := Config{NetConn: conn, LoggerFactory: logging.NewDefaultLoggerFactory()}
	cfg.applyDefaults()
	a, err := createAssociationFromConfig(&cfg)
	require.NoError(t, err)
	a.setState(established)

	woken := func() bool {
		select {
		case <-a.awakeWriteLoopCh:
			return true
		default:
			return false
		}
	}
	send := func() {
		require.NoError(t, a.sendPayloadData(context.Background(), []*chunkPayloadData{{
			streamIdentifier: 1, userData: make([]byte, 100), beginningFragment: true, endingFragment: true,
		}}))
	}

	send()
	assert.True(t, woken(), "not held: the write loop is woken")

	a.lock.Lock()
	a.paceArmed = true
	a.lock.Unlock()
	send()
	assert.False(t, woken(), "held by the pace: the pace timer wakes it")

	a.lock.Lock()
	a.paceArmed = false
	a.lock.Unlock()
	send()
	assert.True(t, woken(), "the pace timer fired: woken again")
	assert.Equal(t, 3, a.pendingQueue.size(), "every chunk was queued")
}

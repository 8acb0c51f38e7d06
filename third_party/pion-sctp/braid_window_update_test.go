// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/transport/v5/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBraidWindowUpdate: a sender stopped by a full
// receive window resumes as soon as the application reads, because the
// read sends a SACK with the opened window. Without it the sender waits
// for its T3-rtx timer (at least a second) and retransmits the zero-window
// probe the full buffer dropped.
func TestBraidWindowUpdate(t *testing.T) {
	lim := test.TimeOut(10 * time.Second)
	defer lim.Stop()

	const bufSize uint32 = 64 * 1024
	const si uint16 = 6
	br := test.NewBridge()
	a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, bufSize)
	require.NoError(t, err)
	s0, s1, err := establishSessionPair(br, a0, a1, si)
	require.NoError(t, err)

	sbuf := make([]byte, 1000)
	toSend := int(bufSize/1000) * 3
	for i := range toSend {
		binary.BigEndian.PutUint32(sbuf, uint32(i)) //nolint:gosec // G115
		_, err = s0.WriteSCTP(sbuf, PayloadTypeWebRTCBinary)
		require.NoError(t, err)
	}

	tickAll := func() {
		for br.Tick() > 0 {
		}
	}
	// Fill the receiver's buffer: nothing is read until the sender stops.
	for deadline := time.Now().Add(3 * time.Second); ; {
		tickAll()
		a1.lock.RLock()
		credit := a1.getMyReceiverWindowCredit()
		a1.lock.RUnlock()
		if credit == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the receive window did not fill (%d bytes left)", credit)
		time.Sleep(time.Millisecond)
	}

	// Let the sender probe the closed window; the full buffer drops it.
	for range 20 {
		tickAll()
		time.Sleep(time.Millisecond)
	}

	rbuf := make([]byte, 1500)
	received := 0
	start := time.Now()
	for received < toSend {
		for {
			s1.lock.RLock()
			readable := s1.reassemblyQueue.isReadable()
			s1.lock.RUnlock()
			if !readable {
				break
			}
			n, _, err := s1.ReadSCTP(rbuf)
			require.NoError(t, err)
			require.Equal(t, len(sbuf), n)
			require.Equal(t, received, int(binary.BigEndian.Uint32(rbuf)))
			received++
		}
		tickAll()
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, uint64(0), a0.stats.getNumT3Timeouts(), "the sender waited for T3-rtx")
	t.Logf("received %d messages in %v after the window filled", received, time.Since(start))
	closeAssociationPair(br, a0, a1)
}

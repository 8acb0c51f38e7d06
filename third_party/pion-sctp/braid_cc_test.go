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

// recordingCC counts the events a controller gets and passes them on.
type recordingCC struct {
	CongestionControl
	starts, acks, losses, firstLosses, recoveryEnds, rtos, idles int
	acked                                                        uint64
	rateSamples                                                  int
}

func (r *recordingCC) Start(p CCStart) { r.starts++; r.CongestionControl.Start(p) }
func (r *recordingCC) OnAck(e *AckEvent) {
	r.acks++
	r.acked += uint64(e.Acked)
	if e.Rate.Interval > 0 {
		r.rateSamples++
	}
	r.CongestionControl.OnAck(e)
}

func (r *recordingCC) OnLoss(e LossEvent) {
	r.losses++
	if e.First {
		r.firstLosses++
	}
	r.CongestionControl.OnLoss(e)
}

func (r *recordingCC) OnRecoveryEnd(now time.Time) {
	r.recoveryEnds++
	r.CongestionControl.OnRecoveryEnd(now)
}

func (r *recordingCC) OnRTO(e RTOEvent) { r.rtos++; r.CongestionControl.OnRTO(e) }
func (r *recordingCC) OnIdleRestart(now time.Time, idle time.Duration) {
	r.idles++
	r.CongestionControl.OnIdleRestart(now, idle)
}

// TestBraidCongestionControl: an association runs the
// controller SetCongestionControl gives it, started with the handshake's
// window, and tells it what happens: SACKs with their delivery-rate
// samples, a chunk lost (fast retransmit: Fast Recovery's first loss) and
// recovery's end, sending after idle; its window is CWND. Once DATA has
// been sent the controller cannot change.
func TestBraidCongestionControl(t *testing.T) {
	for _, name := range CongestionControls {
		t.Run(name, func(t *testing.T) {
			lim := test.TimeOut(10 * time.Second)
			defer lim.Stop()
			br := test.NewBridge()
			a0, a1, err := createNewAssociationPair(br, ackModeNoDelay, 0)
			require.NoError(t, err)
			defer closeAssociationPair(br, a0, a1)

			cc, err := NewCongestionControl(name)
			require.NoError(t, err)
			rec := &recordingCC{CongestionControl: cc}
			require.NoError(t, a0.SetCongestionControl(rec))
			assert.Equal(t, name, a0.CongestionControl())
			assert.Equal(t, 1, rec.starts, "started: the handshake had set the peer's window")

			s0, s1, err := establishSessionPair(br, a0, a1, 1)
			require.NoError(t, err)
			assert.ErrorIs(t, a0.SetCongestionControl(newReno()), ErrCongestionControlStarted)

			// Ten messages, the first lost: the nine behind it are SACKed
			// with a gap, fast retransmit resends it, its SACK ends recovery.
			br.DropNextNWrites(0, 1)
			sbuf := make([]byte, 1000)
			for i := range 10 {
				binary.BigEndian.PutUint32(sbuf, uint32(i)) //nolint:gosec // G115
				_, err := s0.WriteSCTP(sbuf, PayloadTypeWebRTCBinary)
				require.NoError(t, err)
			}
			flushBuffers(br, a0, a1)
			buf := make([]byte, 2000)
			for i := range 10 {
				n, _, err := s1.ReadSCTP(buf)
				require.NoError(t, err)
				assert.Equal(t, uint32(i), binary.BigEndian.Uint32(buf[:n])) //nolint:gosec // G115
			}

			a0.lock.RLock()
			defer a0.lock.RUnlock()
			assert.GreaterOrEqual(t, rec.acked, uint64(10*1000+5), "the SACKs' bytes, the hello's included")
			assert.Positive(t, rec.rateSamples, "no delivery-rate sample")
			assert.Equal(t, 1, rec.firstLosses, "the lost chunk began Fast Recovery")
			assert.Equal(t, 1, rec.recoveryEnds, "its retransmission's SACK ended it")
			assert.Zero(t, rec.rtos)
			assert.Positive(t, rec.idles, "the hello and the messages left with nothing in flight")
			assert.Equal(t, rec.Window(), a0.CWND())
			assert.Equal(t, uint64(10*1000+5), a0.rate.delivered, "delivered bytes")
		})
	}
	_, err := NewCongestionControl("vegas")
	assert.ErrorIs(t, err, ErrUnknownCongestionControl)
}

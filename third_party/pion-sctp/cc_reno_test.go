// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRenoTrace: reno as a controller of its own, driven
// by events: slow start doubles cwnd in a round trip of SACKs; congestion
// avoidance adds n MTUs a round trip for n flows; the first loss of Fast
// Recovery halves cwnd with one flow and takes 1/(2n) of it with n (each
// further loss of the window another share, down to half); a timeout
// takes one flow's share (all but one MTU with one flow).
func TestRenoTrace(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, flows := range []uint32{1, 4} {
		r := newReno()
		r.Start(CCStart{Now: t0, MTU: simMTU, SSThresh: 1 << 30, Flows: 1})
		assert.Equal(t, initialCwnd(simMTU), r.Window())
		r.beforeFirstData(flows, simMTU)
		assert.Equal(t, flows*initialCwnd(simMTU), r.Window(), "%d flows: initial windows", flows)

		// A round trip of SACKs in slow start doubles cwnd.
		w := r.Window()
		ackClock(r, 50*time.Millisecond, t0, t0.Add(50*time.Millisecond), nil)
		assert.InDelta(t, 2*w, r.Window(), simMTU, "%d flows: slow start's round trip", flows)

		// Congestion avoidance: n MTUs a round trip.
		r.ssthresh = 1
		r.cwnd = 100 * simMTU
		for range 100 {
			r.OnAck(&AckEvent{Now: t0, Acked: simMTU, CumAdvanced: true, Pending: true, Inflight: r.cwnd,
				MTU: simMTU, Flows: flows})
		}
		assert.Equal(t, (100+flows)*simMTU, r.Window(), "%d flows: a round trip of congestion avoidance", flows)

		// Losses of one window.
		r.cwnd = 160 * simMTU
		r.OnLoss(LossEvent{Now: t0, Bytes: simMTU, First: true, MTU: simMTU, Flows: flows})
		want := uint32(160 * simMTU / 2)
		if flows > 1 {
			want = 160*simMTU - 160*simMTU/(2*flows)
		}
		assert.Equal(t, want, r.Window(), "%d flows: the first loss", flows)
		for range 2 * flows {
			r.OnLoss(LossEvent{Now: t0, Bytes: simMTU, MTU: simMTU, Flows: flows})
		}
		assert.Equal(t, uint32(80*simMTU), r.Window(), "%d flows: all the window's losses: half", flows)

		// A timeout.
		r.cwnd = 160 * simMTU
		cut := r.lossCut(flows)
		r.OnRTO(RTOEvent{Now: t0, Consecutive: 1, MTU: simMTU, Flows: flows})
		assert.Equal(t, max(160*simMTU/flows*(flows-1), simMTU), r.Window(), "%d flows: a timeout", flows)
		assert.Equal(t, cut, r.SSThresh(), "%d flows: ssthresh after a timeout", flows)
	}
}

// TestRenoMathis: through a 100 Mbit/s, 50 ms path with 1% random loss,
// one reno flow carries about MSS/(RTT·sqrt(2p/3)) (Mathis et al.), 2.8
// Mbit/s; four flows about four times that.
func TestRenoMathis(t *testing.T) {
	mathis := simMTU / (0.05 * math.Sqrt(2*0.01/3))
	for _, flows := range []uint32{1, 4} {
		s := newCCSim(newReno(), 100, 50*time.Millisecond, 0.01, 7)
		s.flows = flows
		s.run(30 * time.Second)
		got := s.goodput(5*time.Second, 30*time.Second)
		assert.InDelta(t, float64(flows)*mathis, got, 0.35*float64(flows)*mathis, "%d flows: %.2f Mbit/s", flows, got*8/1e6)
	}
}

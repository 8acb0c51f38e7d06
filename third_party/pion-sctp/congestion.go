// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// CongestionControl is an association's congestion controller: it
// decides how many bytes of DATA may be in flight (Window) and how fast
// new DATA may leave (PacingRate). The association keeps the mechanics:
// which chunks are in flight, acknowledged, lost and retransmitted; Fast
// Recovery's entry and exit (RFC 9260 sec 7.2.4); the T3-rtx timer; the
// delivery-rate samples (rate.go); the pacer. It tells the controller
// what happened through the On methods, as Linux's TCP tells its
// tcp_congestion_ops.
//
// Calls. The association calls every method with its lock held, so never
// two at once, and an implementation needs no lock of its own. Every
// input comes in the call, the time included, so a controller is a
// deterministic function of its events: trace tests drive one without an
// association (cc_*_test.go). Byte counts are DATA chunk user data, the
// bytes RFC 9260's cwnd counts.
//
// Order. Start comes first, once the handshake has told the peer's
// window. Per SACK: OnRecoveryEnd if it acknowledged Fast Recovery's exit
// point; OnAck if it acknowledged new bytes; then OnLoss for each chunk it
// newly showed lost (as RFC 9260 orders them: the bytes acknowledged count
// in sec 7.2.1-7.2.2 before sec 7.2.4's loss reports; a controller that
// wants a SACK's losses with its bytes sees them at the next OnAck).
// OnRTO on each T3-rtx timeout; OnIdleRestart when new data leaves with
// nothing in flight.
type CongestionControl interface {
	// Name is the controller's name, one of CongestionControls.
	Name() string
	// Start sets the controller up: called once the association knows the
	// peer's initial window, or when the controller is installed on an
	// association that does (SetCongestionControl), before its first DATA
	// chunk either way.
	Start(p CCStart)
	// OnAck is a SACK (or a SHUTDOWN's cumulative TSN) that acknowledged
	// new bytes.
	OnAck(e *AckEvent)
	// OnLoss is a chunk found lost by fast retransmit's rule (three miss
	// indications); e.First if it begins Fast Recovery.
	OnLoss(e LossEvent)
	// OnRecoveryEnd is Fast Recovery's end: its exit point was
	// acknowledged. (A T3-rtx timeout ends it too, in OnRTO.)
	OnRecoveryEnd(now time.Time)
	// OnRTO is a T3-rtx timeout.
	OnRTO(e RTOEvent)
	// OnIdleRestart is new data leaving with nothing in flight, idle after
	// the last DATA chunk sent before it (0 for the first).
	OnIdleRestart(now time.Time, idle time.Duration)
	// Window is cwnd: the bytes that may be in flight.
	Window() uint32
	// PacingRate is the rate in bytes a second at which a paced
	// association sends new data (SetPacing), given the path's smallest
	// RTT so far (never 0); 0 leaves it unpaced.
	PacingRate(minRTT time.Duration) float64
}

// CCStart is what a controller starts from.
type CCStart struct {
	Now time.Time
	// MTU is the path MTU; SSThresh the initial slow-start threshold: the
	// peer's advertised window (RFC 9260 sec 7.2.1 allows any).
	MTU, SSThresh uint32
	// MinWindow is the least cwnd (Config.MinCwnd; 0: none), CAStep the
	// least congestion-avoidance step (Config.CwndCAStep; 0: none).
	MinWindow, CAStep uint32
	// Flows is SetFlows's count when the controller starts (reno).
	Flows uint32
}

// AckEvent is a SACK that acknowledged new bytes.
type AckEvent struct {
	Now time.Time
	// Acked counts the bytes it newly acknowledged, by the cumulative TSN
	// or by gap blocks (not Duplicate TSNs); CumAdvanced reports that it
	// moved the cumulative TSN ack point.
	Acked       uint32
	CumAdvanced bool
	// CumTSN is the cumulative TSN ack point after it, NextTSN the TSN the
	// next new chunk gets: a round ends when CumTSN reaches the NextTSN-1
	// of its beginning (HyStart++).
	CumTSN, NextTSN uint32
	// PriorInflight and Inflight are the bytes in flight before the SACK
	// and after it (chunks marked lost stay in flight until acknowledged,
	// as RFC 9260 counts them).
	PriorInflight, Inflight uint32
	// InRecovery: the association is in Fast Recovery after the SACK.
	InRecovery bool
	// Pending: data waits to be sent. CwndLimited: it waits and the write
	// loop last stopped because cwnd was full.
	Pending, CwndLimited bool
	// MaxFlight is the largest flight of the current round (Linux's
	// max_packets_out).
	MaxFlight uint32
	// RTT is the SACK's RTT sample: the smallest of its newly acknowledged
	// original transmissions' (retransmissions give none); 0 if none.
	// MinRTT is the path's smallest so far (0: none yet).
	RTT, MinRTT time.Duration
	// Rate is the SACK's delivery-rate sample (rate.go).
	Rate RateSample
	// MTU is the path MTU; Flows SetFlows's count; HyStart SetHyStart's.
	MTU     uint32
	Flows   uint32
	HyStart bool
}

// LossEvent is a chunk found lost by fast retransmit's rule.
type LossEvent struct {
	Now time.Time
	// Bytes are the chunk's; Inflight the bytes in flight.
	Bytes, Inflight uint32
	// First: this loss begins Fast Recovery (the association was not in
	// it); else it is another loss of the window recovery began with.
	First bool
	MTU   uint32
	Flows uint32
}

// RTOEvent is a T3-rtx timeout.
type RTOEvent struct {
	Now time.Time
	// Consecutive counts the timeouts in a row, this one included.
	Consecutive uint
	// InRecovery: the association was in Fast Recovery, which the timeout
	// ends.
	InRecovery bool
	Inflight   uint32
	MTU        uint32
	Flows      uint32
}

// Congestion controllers by name.
const (
	CCReno     = "reno"
	CCCubic    = "cubic"
	CCBBR      = "bbr"
	CCBBRCubic = "bbr-cubic"
)

// CongestionControls lists the controllers NewCongestionControl makes.
var CongestionControls = []string{CCReno, CCCubic, CCBBR, CCBBRCubic}

// ErrUnknownCongestionControl is returned for a name that is not one of
// CongestionControls.
var ErrUnknownCongestionControl = errors.New("sctp: unknown congestion control")

// ErrCongestionControlStarted is returned by SetCongestionControl once
// the association has sent DATA.
var ErrCongestionControlStarted = errors.New("sctp: congestion control set after DATA was sent")

// NewCongestionControl makes the named controller: reno (RFC 9260's,
// standing for SetFlows's count of flows, with HyStart++ if SetHyStart),
// cubic (RFC 9438), bbr (BBRv1, as Linux's tcp_bbr) or bbr-cubic (bbr
// whose cwnd a CUBIC window bounds once a loss meets a standing queue,
// cc_bbr_bound.go).
func NewCongestionControl(name string) (CongestionControl, error) {
	switch name {
	case CCReno:
		return newReno(), nil
	case CCCubic:
		return newCubic(), nil
	case CCBBR:
		return newBBR(), nil
	case CCBBRCubic:
		return newBBRCubic(), nil
	}

	return nil, fmt.Errorf("%w %q (want %s)", ErrUnknownCongestionControl, name, strings.Join(CongestionControls, ", "))
}

// SetCongestionControl replaces the association's controller (reno by
// default) with cc, before the association's first DATA chunk (after it,
// ErrCongestionControlStarted). SetFlows's count and SetHyStart's setting
// carry over to the events cc gets.
func (a *Association) SetCongestionControl(cc CongestionControl) error {
	a.lock.Lock()
	defer a.lock.Unlock()
	if a.sentData {
		return ErrCongestionControlStarted
	}
	a.cc = cc
	if a.ccStarted {
		a.cc.Start(a.ccStartParams())
		a.syncCwnd()
	}

	return nil
}

// CongestionControl returns the name of the association's controller.
func (a *Association) CongestionControl() string {
	a.lock.RLock()
	defer a.lock.RUnlock()

	return a.cc.Name()
}

// CongestionInfo is a snapshot of an association's congestion controller.
type CongestionInfo struct {
	Name string
	// Window is cwnd; SSThresh ssthresh (0 for a controller without one).
	Window, SSThresh uint32
	// PacingRate is the controller's pace in bytes a second at the path's
	// smallest RTT so far (0 before an RTT sample, or if it has none);
	// the association paces at it only if SetPacing turned pacing on.
	PacingRate float64
	// Phase is BBR's (Startup, Drain, ProbeBW, ProbeRTT); empty for others.
	Phase string
	// BottleneckRate is BBR's estimate of the path's rate in bytes a
	// second, MinRTT its minimum RTT; 0 for others.
	BottleneckRate float64
	MinRTT         time.Duration
}

// CongestionInfo returns a snapshot of the association's controller.
func (a *Association) CongestionInfo() CongestionInfo {
	minRTT := time.Duration(a.MinRTT() * float64(time.Millisecond))
	a.lock.RLock()
	defer a.lock.RUnlock()
	info := CongestionInfo{Name: a.cc.Name(), Window: a.cc.Window(), SSThresh: a.ccSSThresh()}
	if minRTT > 0 {
		info.PacingRate = a.cc.PacingRate(minRTT)
	}
	if b, ok := a.cc.(*bbr); ok {
		info.Phase, info.BottleneckRate, info.MinRTT = b.Mode(), b.bw.get(), b.minRTT
	}

	return info
}

// startCC starts the controller once the handshake has set the peer's
// window, on either side: ssthresh begins there (RFC 9260 sec 7.2.1).
// The caller should hold the lock.
func (a *Association) startCC() {
	a.initSSThresh = a.RWND()
	a.ccStarted = true
	a.cc.Start(a.ccStartParams())
	a.syncCwnd()
}

// ccStartParams are the parameters Start gets.
func (a *Association) ccStartParams() CCStart {
	return CCStart{Now: time.Now(), MTU: a.MTU(), SSThresh: a.initSSThresh,
		MinWindow: a.minCwnd, CAStep: a.cwndCAStep, Flows: a.flowCount()}
}

// syncCwnd publishes the controller's window for CWND, which other
// goroutines read without the lock. The caller should hold the lock.
func (a *Association) syncCwnd() {
	a.setCWNDMirror(a.cc.Window())
}

// ssthresher is a controller with a slow-start threshold (reno, cubic),
// for logs and for tests.
type ssthresher interface{ SSThresh() uint32 }

// ccSSThresh is the controller's ssthresh, 0 if it has none.
func (a *Association) ccSSThresh() uint32 {
	if s, ok := a.cc.(ssthresher); ok {
		return s.SSThresh()
	}

	return 0
}

// windowPacingRate is the pace of a window-based controller:
// gain·cwnd/minRTT, gain 2 while cwnd is below ssthresh and 1.25 once it
// is not. Linux's TCP pacing has ratios of the same kind
// (tcp_pacing_ss_ratio 200 while cwnd < ssthresh/2, tcp_pacing_ca_ratio
// 120 after, over the smoothed RTT).
func windowPacingRate(cwnd, ssthresh uint32, minRTT time.Duration) float64 {
	gain := paceGainCA
	if cwnd < ssthresh {
		gain = paceGainSS
	}

	return gain * float64(cwnd) / minRTT.Seconds()
}

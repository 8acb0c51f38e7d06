// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"math/rand/v2"
	"time"
)

// simMTU is the simulated path's MTU (the association's default).
const simMTU = 1452

// ackClock feeds c the SACKs of a path of the given RTT from t0 to t1:
// each round trip acknowledges a window, a packet a SACK, spread evenly;
// at each SACK it calls f.
func ackClock(c CongestionControl, rtt time.Duration, t0, t1 time.Time, f func(now time.Time)) {
	for now := t0; now.Before(t1); {
		n := max(c.Window()/simMTU, 1)
		step := rtt / time.Duration(n)
		for range n {
			c.OnAck(&AckEvent{Now: now, Acked: simMTU, CumAdvanced: true, Pending: true, MinRTT: rtt, RTT: rtt,
				MTU: simMTU, Inflight: c.Window()})
			if f != nil {
				f(now)
			}
			now = now.Add(step)
		}
	}
}

// ccSim drives a congestion controller through a simulated path, event by
// event on a simulated clock, so that its trace (cwnd, pace, phases,
// throughput) is a deterministic function of the path and the seed.
//
// The path: random loss, then a bottleneck of rate bytes a second with a
// FIFO queue of queue bytes (tail drop), then the rest of the base RTT.
// The receiver acknowledges every packet at once. The sender always has
// data (unless appLimitedRate caps what the application offers), sends
// packets of mtu bytes while the flight is under cwnd, spaced by the
// controller's pacing rate if it gives one, and detects loss as SCTP's
// fast retransmit does (three later packets acknowledged); a lost packet
// is retransmitted at once, outside cwnd, and stays in flight until its
// retransmission is acknowledged, as RFC 9260 counts it. Fast Recovery
// begins on a loss outside it and ends when the highest packet sent when
// it began is acknowledged. The delivery-rate samples come from the
// association's own estimator (rate.go).
type ccSim struct {
	cc      CongestionControl
	mtu     uint32
	rate    float64 // bytes a second
	rtt     time.Duration
	queue   int // bytes
	loss    float64
	rng     *rand.Rand
	hyStart bool
	flows   uint32
	// appLimitedRate, if set, caps what the application offers (bytes a
	// second).
	appLimitedRate float64

	now           time.Time
	start         time.Time
	est           rateEstimator
	pkts          []*simPkt // by seq
	nextSeq       uint32
	cumAcked      uint32 // all below are acknowledged
	inflight      uint32
	link          *simLink
	acks          []*simPkt // on their way back, by arrival
	nextSend      time.Time
	offered       float64 // bytes the application has offered so far
	inRecovery    bool
	recoveryEnd   uint32
	minRTT        time.Duration
	maxFlight     uint32
	delivered     uint64 // unique payload bytes acknowledged
	drops, lost   int
	samples       []ccSample
	every         time.Duration
	nextSample    time.Time
	maxQueueBytes int
	lastAckedSent time.Time // the send time of the newest transmission acknowledged
	started       bool
}

// simPkt is one DATA chunk (a packet of mtu bytes).
type simPkt struct {
	seq        uint32
	size       uint32
	sent       time.Time
	retx       bool
	rate       chunkRate
	acked      bool
	lostMarked bool
	departAt   time.Time // leaves the bottleneck
	ackAt      time.Time // its SACK reaches the sender
	dropped    bool
}

// simLink is the bottleneck's state, which the sims that share it share.
type simLink struct {
	lastDepart time.Time // when the last packet queued leaves it
}

// ccSample is the controller's state at one moment of a run.
type ccSample struct {
	at        time.Duration
	cwnd      uint32
	pace      float64
	mode      string
	delivered uint64
	inflight  uint32
}

func newCCSim(cc CongestionControl, mbps float64, rtt time.Duration, loss float64, seed uint64) *ccSim {
	start := time.Unix(1000, 0)
	s := &ccSim{
		cc: cc, mtu: simMTU, rate: mbps * 1e6 / 8, rtt: rtt, loss: loss,
		rng: rand.New(rand.NewPCG(seed, 1)), flows: 1,
		now: start, start: start, est: newRateEstimator(start), every: 100 * time.Millisecond, link: &simLink{},
	}
	s.queue = max(int(s.rate*rtt.Seconds()), 100*int(s.mtu)) // one BDP, as the bed's default
	s.nextSample = start

	return s
}

// run starts the controller (ssthresh as a peer's large window) on its
// first call, and runs the path for d more.
func (s *ccSim) run(d time.Duration) {
	if !s.started {
		s.cc.Start(CCStart{Now: s.now, MTU: s.mtu, SSThresh: 1 << 30, Flows: s.flows})
		s.started = true
	}
	end := s.now.Add(d)
	for s.now.Before(end) {
		s.step(end)
	}
}

// runShared runs sims that share one bottleneck (the first's; the rate
// and queue are each sim's own, so they should be alike) side by side for
// d, their events in time order.
func runShared(d time.Duration, sims ...*ccSim) {
	for _, s := range sims {
		s.link = sims[0].link
		if !s.started {
			s.cc.Start(CCStart{Now: s.now, MTU: s.mtu, SSThresh: 1 << 30, Flows: s.flows})
			s.started = true
		}
	}
	end := sims[0].now.Add(d)
	for {
		first, at := sims[0], sims[0].next(end)
		for _, s := range sims[1:] {
			if t := s.next(end); t.Before(at) {
				first, at = s, t
			}
		}
		if !at.Before(end) {
			break
		}
		first.step(at)
	}
	for _, s := range sims {
		for s.now.Before(end) {
			s.step(end)
		}
	}
}

// next is the time of the sim's next event, or end if none comes before.
func (s *ccSim) next(end time.Time) time.Time {
	next := end
	if len(s.acks) > 0 && s.acks[0].ackAt.Before(next) {
		next = s.acks[0].ackAt
	}
	if sendAt, canSend := s.sendTime(); canSend && sendAt.Before(next) {
		next = sendAt
	}

	return next
}

// step moves the clock to the next event and handles it.
func (s *ccSim) step(end time.Time) {
	next := s.next(end)
	sendAt, canSend := s.sendTime()
	for !s.nextSample.After(next) {
		s.sample(s.nextSample)
	}
	s.now = next
	switch {
	case len(s.acks) > 0 && !s.acks[0].ackAt.After(s.now):
		p := s.acks[0]
		s.acks = s.acks[1:]
		s.onAck(p)
	case canSend && !sendAt.After(s.now):
		s.send(s.newPacket(), false)
	}
}

func (s *ccSim) sample(at time.Time) {
	m := ""
	if p, ok := s.cc.(interface{ Mode() string }); ok {
		m = p.Mode()
	}
	var pace float64
	if s.minRTT > 0 {
		pace = s.cc.PacingRate(s.minRTT)
	}
	s.samples = append(s.samples, ccSample{at: at.Sub(s.start), cwnd: s.cc.Window(), pace: pace,
		mode: m, delivered: s.delivered, inflight: s.inflight})
	s.nextSample = at.Add(s.every)
}

// sendTime is when the next new packet may leave, if cwnd allows one.
func (s *ccSim) sendTime() (time.Time, bool) {
	if s.inflight+s.mtu > s.cc.Window() {
		return time.Time{}, false
	}
	at := maxTime(s.nextSend, s.now)
	if s.appLimitedRate > 0 {
		// The application has offered offered bytes by now; the next
		// packet's worth comes this much later.
		due := s.start.Add(time.Duration((s.offered + float64(s.mtu)) / s.appLimitedRate * float64(time.Second)))
		if due.After(at) {
			if s.inflight < s.cc.Window() {
				s.est.markAppLimited(s.inflight)
			}
			at = due
		}
	}

	return at, true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}

	return b
}

func (s *ccSim) newPacket() *simPkt {
	p := &simPkt{seq: s.nextSeq, size: s.mtu}
	s.nextSeq++
	s.pkts = append(s.pkts, p)
	s.offered += float64(s.mtu)

	return p
}

// send puts a transmission of p on the path.
func (s *ccSim) send(p *simPkt, retx bool) {
	if !retx {
		if s.inflight == 0 {
			s.cc.OnIdleRestart(s.now, 0)
		}
		s.est.onSent(&p.rate, s.now, s.inflight == 0)
		s.inflight += p.size
		s.maxFlight = max(s.maxFlight, s.inflight)
		if pace := s.pace(); pace > 0 {
			s.nextSend = s.now.Add(time.Duration(float64(p.size) / pace * float64(time.Second)))
		}
	} else {
		s.est.onSent(&p.rate, s.now, false)
	}
	p.sent, p.retx, p.lostMarked = s.now, retx, false
	if s.rng.Float64() < s.loss {
		p.dropped = true

		return
	}
	depart := maxTime(s.now, s.link.lastDepart).Add(time.Duration(float64(p.size) / s.rate * float64(time.Second)))
	backlog := int(depart.Sub(s.now).Seconds() * s.rate)
	s.maxQueueBytes = max(s.maxQueueBytes, backlog)
	if backlog > s.queue {
		p.dropped = true
		s.drops++

		return
	}
	p.dropped = false
	s.link.lastDepart = depart
	p.departAt = depart
	p.ackAt = depart.Add(s.rtt)
	s.acks = append(s.acks, p)
}

func (s *ccSim) pace() float64 {
	if s.minRTT == 0 {
		return 0
	}

	return s.cc.PacingRate(s.minRTT)
}

// onAck is the SACK of p: the controller's OnAck, then the losses it
// shows.
func (s *ccSim) onAck(p *simPkt) {
	if p.acked {
		return
	}
	p.acked = true
	if p.sent.After(s.lastAckedSent) {
		s.lastAckedSent = p.sent
	}
	s.inflight -= p.size
	s.delivered += uint64(p.size)
	s.est.onDelivered(&p.rate, int(p.size), p.sent)
	var rtt time.Duration
	if !p.retx {
		rtt = s.now.Sub(p.sent)
		if s.minRTT == 0 || rtt < s.minRTT {
			s.minRTT = rtt
		}
	}
	for s.cumAcked < s.nextSeq && s.pkts[s.cumAcked].acked {
		s.cumAcked++
	}
	if s.inRecovery && s.cumAcked > s.recoveryEnd {
		s.inRecovery = false
		s.cc.OnRecoveryEnd(s.now)
	}
	e := AckEvent{
		Now: s.now, Acked: p.size, CumAdvanced: true, CumTSN: s.cumAcked - 1, NextTSN: s.nextSeq,
		PriorInflight: s.inflight + p.size, Inflight: s.inflight, InRecovery: s.inRecovery,
		Pending: s.appLimitedRate == 0, CwndLimited: s.inflight+s.mtu > s.cc.Window(),
		MaxFlight: s.maxFlight, RTT: rtt, MinRTT: s.minRTT, Rate: s.est.take(s.now, s.minRTT),
		MTU: s.mtu, Flows: s.flows, HyStart: s.hyStart,
	}
	s.cc.OnAck(&e)
	s.detectLosses(p.seq)
}

// detectLosses marks lost what three later packets' SACKs passed (an
// original transmission) or a later transmission's SACK passed (a
// retransmission, as RACK finds it), and retransmits it.
func (s *ccSim) detectLosses(acked uint32) {
	for seq := s.cumAcked; seq < s.nextSeq && seq+3 <= acked; seq++ {
		q := s.pkts[seq]
		if q.acked || q.lostMarked || !q.dropped || q.retx && !s.lastAckedSent.After(q.sent) {
			continue
		}
		q.lostMarked = true
		s.lost++
		first := !s.inRecovery
		if first {
			s.inRecovery, s.recoveryEnd = true, s.nextSeq-1
		}
		s.cc.OnLoss(LossEvent{Now: s.now, Bytes: q.size, Inflight: s.inflight, First: first, MTU: s.mtu, Flows: s.flows})
		s.send(q, true)
	}
}

// rate is the goodput over [from, to] of the run, in bytes a second.
func (s *ccSim) goodput(from, to time.Duration) float64 {
	var a, b *ccSample
	for i := range s.samples {
		x := &s.samples[i]
		if a == nil && x.at >= from {
			a = x
		}
		if x.at <= to {
			b = x
		}
	}
	if a == nil || b == nil || b.at <= a.at {
		return 0
	}

	return float64(b.delivered-a.delivered) / (b.at - a.at).Seconds()
}

package mux

import (
	"time"

	"github.com/braidhq/braid/transport/internal/stripes"
)

// The stripe tuner (Config.TuneStripes): a striped association's sender
// chooses how many of its links carry blocks by what the kernel says of
// them, the way transport/internal/stripes describes. The peer opened all
// the links at the start, so adding one costs no handshake: a link that
// carried nothing restarts from TCP's initial window, and one left idle
// carries only pings. The receiver takes blocks from every link whatever
// the sender's count, so each side tunes its own sending.
//
// Each epoch is sampled samplesPerEpoch times. At each sample, every
// sending link with data in flight gives its smoothed RTT (the epoch's
// smallest is the epoch's RTT) and says whether its congestion window
// held it back (full, with bytes waiting behind it: TCP_NOTSENT_LOWAT
// keeps those few, so they wait only for the window or the peer's). The
// bytes acknowledged over all links in the epoch, in the share of samples
// that were held, count as waiting for the window. The path's RTT is the
// smallest any link has seen (so with routes, the shortest path's; a
// kernel before 4.9 reports none, and then no queue shows). A link whose
// peer's receive window holds it back can look held by its congestion
// window too (the kernel stops growing cwnd there), so a slow receiver
// may get stripes that do not help it. The tuner never sends on fewer
// links than it started with (Config.SendStripes).

// samplesPerEpoch is how often an epoch reads its links' counters.
const samplesPerEpoch = 8

// tuneStripes runs the tuner until the association stops, or returns at
// once if the links cannot be read or it already sends on all of them.
func (a *Assoc) tuneStripes() {
	if _, ok := a.cfg.Probe(a.links[0].conn); !ok {
		return
	}
	start := int(a.sending.Load())
	if start >= len(a.links) {
		return // the floor: nothing to tune
	}
	tu := stripes.NewTuner(start, start, len(a.links))
	var path time.Duration // the smallest RTT any link has seen
	lastAcked := a.linksAcked(&path)
	t := time.NewTimer(stripes.MinEpoch / samplesPerEpoch)
	defer t.Stop()
	var e stripes.Epoch
	var inFlight, held, samples int
	for {
		select {
		case <-t.C:
		case <-a.stop:
			return
		}
		n := int(a.sending.Load())
		for _, l := range a.links[:n] {
			s, ok := a.cfg.Probe(l.conn)
			if !ok || !s.InFlight() {
				continue
			}
			inFlight++
			if s.HeldByCwnd() {
				held++
			}
			if e.RTT == 0 || s.RTT < e.RTT {
				e.RTT = s.RTT
			}
		}
		if samples++; samples < samplesPerEpoch {
			t.Reset(stripes.EpochFor(path) / samplesPerEpoch)
			continue
		}
		acked := a.linksAcked(&path)
		e.Acked, e.PathRTT = acked-lastAcked, path
		if inFlight > 0 {
			e.Limited = e.Acked * uint64(held) / uint64(inFlight)
		}
		if next := tu.Next(e); next != n {
			a.setSending(next)
		}
		lastAcked = acked
		e, inFlight, held, samples = stripes.Epoch{}, 0, 0, 0
		t.Reset(stripes.EpochFor(path) / samplesPerEpoch)
	}
}

// linksAcked is the bytes acknowledged on all the links so far; it lowers
// *path to the smallest RTT a link has seen.
func (a *Assoc) linksAcked(path *time.Duration) uint64 {
	var acked uint64
	for _, l := range a.links {
		s, ok := a.cfg.Probe(l.conn)
		if !ok {
			continue
		}
		acked += s.BytesAcked
		if s.MinRTT > 0 && (*path == 0 || s.MinRTT < *path) {
			*path = s.MinRTT
		}
	}
	return acked
}

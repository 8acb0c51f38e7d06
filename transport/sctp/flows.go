package sctp

import (
	"time"

	"github.com/braidhq/braid/transport/internal/stripes"
	"github.com/pion/sctp"
)

// Virtual flows: striping inside one association. Under random loss a
// reno flow carries about MSS/(RTT·√p) whatever the link's rate (Mathis
// et al.): 2.7 Mbit/s measured at 50 ms and 1% loss on a 100 Mbit/s link. N TCP
// connections carry N times that, which is why tcpn and ptcp beat one
// association there (seeds 001 and 002 in docs/seeds.md). An association can do the same
// without N sequence spaces: its congestion control stands for N reno
// flows (MulTCP, the fork's Association.SetFlows), growing its window N MTUs a round trip
// and giving up 1/(2N) of it on a loss rather than half. Its streams keep
// their order and their mapping to worker threads; the receiver sees one
// association.
//
// N is a stripe count and is chosen the way seed 001 chooses one: N =
// RTT × rate ÷ the largest window, then by measurement. An association's
// window is pion's 8 MiB receive buffer, more than the bandwidth-delay
// product of any path braid meets (670 Mbit/s at 100 ms), so the formula
// gives 1, and the measurement decides: transport/internal/stripes tunes N
// each epoch from pion's congestion sample (bytes acknowledged, those
// acknowledged while the write loop was held by cwnd, the epoch's smallest
// RTT: the fork's TakeCongestionSample) and the path's smallest
// RTT, dropping a flow on a standing queue and adding one while the window
// holds the sender back. It starts at MinTunedFlows and never goes below:
// with loss, N grows until the link is full or MaxFlows is reached; on a
// clean link it stays at the floor. Both ends tune their own sending
// direction. Associations with a peer on this host keep one flow.
// Config.Flows fixes N instead.
//
// The floor is there because the queue signal fails on short paths. At
// 1 ms and 1% loss through the emulator, epochs whose link carried 60
// Mbit/s of 100 read a queue of 2 to 8 ms: the delay of busy hosts (the
// emulator alone delivered packets up to 5 ms late) was as large as any
// queue, so the tuner hovered at 1 to 3 flows, and a fixed 4 ran jobs
// 1.14× as fast. On clean links a fixed 4 ran them 0.95-1.19× as fast as
// the tuner from one (docs/experiments/net-flows, "The floor of four").

// MaxFlows bounds N (Config.Flows, and the tuner): as many as ptcp's
// stripes. MinTunedFlows is where the tuner starts, and its floor.
const (
	MaxFlows      = 16
	MinTunedFlows = 4
)

// initialFlows is the flow count an association starts with: one if its
// controller cc is not reno (flows are reno's), else Config.Flows if
// fixed, one if local (its peer is on this host), else the tuner's floor.
// The handshake sets it; start's tuner begins from it.
func initialFlows(cfg *Config, local bool, cc string) int {
	switch {
	case cc != CCReno:
		return 1
	case cfg.Flows > 0:
		return cfg.Flows
	case local:
		return 1
	}
	return MinTunedFlows
}

// msDuration converts pion's milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// tuneFlows runs tu, whose count the association's congestion control
// already stands for, for the association's sending direction until it
// ends.
func (a *Association) tuneFlows(tu *stripes.Tuner) {
	defer a.readers.Done()
	t := time.NewTimer(stripes.MinEpoch)
	defer t.Stop()
	var prev sctp.CongestionSample
	for {
		select {
		case <-t.C:
		case <-a.done:
			return
		}
		s := a.pa.TakeCongestionSample()
		path := msDuration(a.pa.MinRTT())
		e := stripes.Epoch{
			Acked:   s.AckedBytes - prev.AckedBytes,
			Limited: s.LimitedBytes - prev.LimitedBytes,
			RTT:     msDuration(s.EpochMinRTT),
			PathRTT: path,
		}
		prev = s
		if n := tu.N(); tu.Next(e) != n {
			a.cfg.Logger.Debug("flows", "peer", a.conn.RemoteAddr(), "from", n, "to", tu.N(),
				"epoch_rtt", e.RTT, "path_rtt", path)
			a.pa.SetFlows(tu.N())
		}
		t.Reset(stripes.EpochFor(path))
	}
}

// Flows returns the flow count the association's congestion control
// stands for now (see flows.go).
func (a *Association) Flows() int { return a.pa.Flows() }

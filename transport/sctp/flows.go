package sctp

import (
	"time"

	"github.com/pion/sctp"
)

// Virtual flows: striping inside one association. Under random loss a
// reno flow carries about MSS/(RTT·√p) whatever the link's rate (Mathis
// et al.): 2.7 Mbit/s measured at 50 ms and 1% loss on a 100 Mbit/s link. N TCP
// connections carry N times that, which is why tcpn and ptcp beat one
// association there (seeds 001 and 002). An association can do the same
// without N sequence spaces: its congestion control stands for N reno
// flows (pion patch 15, MulTCP), growing its window N MTUs a round trip
// and giving up 1/(2N) of it on a loss rather than half. Its streams keep
// their order and their mapping to worker threads; the receiver sees one
// association.
//
// N is a stripe count and is chosen the way seed 001 chooses one: N =
// RTT × rate ÷ the largest window, then by measurement. An association's
// window is pion's 8 MiB receive buffer, more than the bandwidth-delay
// product of any path braid meets (670 Mbit/s at 100 ms), so the formula
// gives 1, and the measurement decides. Each epoch (flowEpochRTTs round
// trips, at least minFlowEpoch) the tuner looks at what the sender saw:
//   - A standing queue at the bottleneck (the epoch's smallest RTT sample
//     above the path's smallest by a quarter of it, at least queueSlack):
//     the link is full and another flow would only lengthen the queue
//     and take from other traffic. Drop one. Only an epoch heavy enough
//     can show one: one that acknowledged minQueueBytes, or, on a path
//     too slow for that, minLimitedBytes of which most had waited for
//     cwnd. A lighter epoch's samples may all be SACKs the peer delayed
//     (a lone packet waits up to 200 ms), which read as a queue of twice
//     a 100 ms path's RTT.
//   - Otherwise, if most bytes acknowledged in the epoch had waited for
//     the congestion window: the window, not the link, the peer's window
//     or the application, held the sender back. Add one, up to MaxFlows.
//   - Otherwise (idle, or held by the application or the peer's window):
//     keep N; more flows could not help.
//
// Until the first queue, N doubles where it would grow by one, so that
// a long path reaches 16 in four epochs, and that first queue halves it
// (flowTuner).
//
// On a clean link one flow fills the pipe and queues, so N stays at 1 or
// 2; with loss, N grows until the link is full or MaxFlows is reached.
// The queue is a steadier signal than throughput, which random loss makes
// swing by more than one flow's share from one epoch to the next. Both
// ends tune their own sending direction. Associations with a peer on this
// host keep one flow. Config.Flows fixes N instead.

const (
	// MaxFlows bounds N (Config.Flows, and the tuner): as many as ptcp's
	// stripes.
	MaxFlows = 16
	// flowEpochRTTs is an epoch's length in round trips.
	flowEpochRTTs = 4
	// minFlowEpoch is the shortest epoch, so that each has RTT samples
	// and acknowledged bytes enough to judge.
	minFlowEpoch = 100 * time.Millisecond
	// queueSlack is the least queueing delay that counts as a standing
	// queue: scheduling noise on a busy host is about a millisecond.
	queueSlack = 2 * time.Millisecond
	// minQueueBytes is the least an epoch must acknowledge for its RTT
	// samples to show a queue: 45 full packets. A full link acknowledges
	// less per epoch below about 5 Mbit/s (at 25 ms of RTT or less; 1.3
	// Mbit/s at 100 ms), so an epoch held by cwnd needs only
	// minLimitedBytes: six packets, whose SACKs the peer does not delay.
	minQueueBytes   = 64 << 10
	minLimitedBytes = 8 << 10
)

// flowEpoch is what one epoch of an association's sending showed.
type flowEpoch struct {
	acked, limited uint64        // bytes acknowledged; of them, sent after waiting for cwnd
	rtt, pathRTT   time.Duration // the epoch's smallest RTT sample, the path's; 0: none
}

// queued reports a standing queue: in an epoch heavy enough (see
// minQueueBytes), the smallest RTT above the path's by a quarter of it, at
// least queueSlack.
func (e flowEpoch) queued() bool {
	heavy := e.acked >= minQueueBytes || e.acked >= minLimitedBytes && e.heldByCwnd()
	return heavy && e.rtt > 0 && e.pathRTT > 0 && e.rtt-e.pathRTT > max(e.pathRTT/4, queueSlack)
}

// heldByCwnd reports that most of the bytes the epoch acknowledged had
// waited for the congestion window.
func (e flowEpoch) heldByCwnd() bool { return e.acked > 0 && 2*e.limited >= e.acked }

// flowTuner chooses an association's flow count one epoch at a time.
// Until it first sees a queue it doubles the count where it would add
// one, and on that first queue it halves it, back to the last count
// that showed none; from then on it adds and drops one at a time.
type flowTuner struct {
	n       int
	settled bool // a queue has been seen
}

func newFlowTuner() *flowTuner { return &flowTuner{n: 1} }

// next is the flow count after an epoch e run with t.n.
func (t *flowTuner) next(e flowEpoch) int {
	switch {
	case e.queued() && !t.settled:
		t.settled = true
		t.n = max(t.n/2, 1)
	case e.queued():
		t.n = max(t.n-1, 1)
	case !e.heldByCwnd():
	case !t.settled:
		t.n = min(2*t.n, MaxFlows)
	default:
		t.n = min(t.n+1, MaxFlows)
	}
	return t.n
}

// flowEpochFor is the epoch length on a path of round-trip time rtt.
func flowEpochFor(rtt time.Duration) time.Duration {
	return max(flowEpochRTTs*rtt, minFlowEpoch)
}

// msDuration converts pion's milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// tuneFlows runs the tuner for the association's sending direction
// until it ends.
func (a *Association) tuneFlows() {
	defer a.readers.Done()
	t := time.NewTimer(minFlowEpoch)
	defer t.Stop()
	var prev sctp.CongestionSample
	tu := newFlowTuner() // at pion's default, one flow
	for {
		select {
		case <-t.C:
		case <-a.done:
			return
		}
		s := a.pa.TakeCongestionSample()
		path := msDuration(a.pa.MinRTT())
		e := flowEpoch{
			acked:   s.AckedBytes - prev.AckedBytes,
			limited: s.LimitedBytes - prev.LimitedBytes,
			rtt:     msDuration(s.EpochMinRTT),
			pathRTT: path,
		}
		prev = s
		if n := tu.n; tu.next(e) != n {
			a.cfg.Logger.Debug("flows", "peer", a.conn.RemoteAddr(), "from", n, "to", tu.n,
				"epoch_rtt", e.rtt, "path_rtt", path)
			a.pa.SetFlows(tu.n)
		}
		t.Reset(flowEpochFor(path))
	}
}

// Flows returns the flow count the association's congestion control
// stands for now (see flows.go).
func (a *Association) Flows() int { return a.pa.Flows() }

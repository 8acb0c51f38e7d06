// Package stripes chooses a stripe count by measurement, the way seed 001
// (Ogura et al.; docs/seeds.md) asks: for sctp, how many reno flows an association's congestion control
// stands for (transport/sctp, flows.go); for ptcp, how many of an
// association's TCP connections carry its blocks (transport/internal/mux,
// stripe.go).
//
// Under random loss a reno flow carries about MSS/(RTT·√p) whatever the
// link's rate (Mathis et al.), so N flows carry N times that, until the
// link is full. Seed 001's rule, N = RTT × rate ÷ the largest window,
// misplaces the optimum on lossy paths (loss, not the buffer, caps each
// window), so the count is chosen from what the sender sees, one epoch
// (EpochRTTs round trips, at least MinEpoch) at a time:
//   - A standing queue at the bottleneck (the epoch's smallest RTT above
//     the path's smallest by a quarter of it, at least QueueSlack): the
//     link is full and another stripe would only lengthen the queue and
//     take from other traffic. Drop one. Only an epoch heavy enough can
//     show one: one that acknowledged MinQueueBytes, or, on a path too
//     slow for that, MinLimitedBytes of which most had waited for the
//     network. A lighter epoch's samples may all be acknowledgements the
//     peer delayed (a lone packet waits up to 200 ms), which read as a
//     queue of twice a 100 ms path's RTT.
//   - Otherwise, if most bytes acknowledged in the epoch had waited for
//     the congestion window: the window, not the link, the peer or the
//     application, held the sender back. Add one, up to the maximum.
//   - Otherwise (idle, or held by the application or the peer's window):
//     keep N; more stripes could not help.
//
// Until the first queue, N doubles where it would grow by one, so that a
// long path reaches 16 in four epochs from one (two from four), and that
// first queue halves it (Tuner). On a clean link a few stripes fill the
// pipe and queue, so N falls to the tuner's floor or one above it; with
// loss, N grows until the link is full or the maximum is reached. The
// floor is 4 for both sctp and ptcp, the count each starts at: on short
// paths a busy host's delay read as a queue (transport/sctp, flows.go),
// and with a floor of one ptcp's jobs ran slower at 1 ms with loss
// (transport/ptcp). The queue is a steadier signal than throughput, which
// random loss makes swing by more than one stripe's share from one epoch
// to the next.
package stripes

import "time"

const (
	// EpochRTTs is an epoch's length in round trips.
	EpochRTTs = 4
	// MinEpoch is the shortest epoch, so that each has RTT samples and
	// acknowledged bytes enough to judge.
	MinEpoch = 100 * time.Millisecond
	// QueueSlack is the least queueing delay that counts as a standing
	// queue: scheduling noise on a busy host is about a millisecond.
	QueueSlack = 2 * time.Millisecond
	// MinQueueBytes is the least an epoch must acknowledge for its RTT
	// samples to show a queue: 45 full packets. A full link acknowledges
	// less per epoch below about 5 Mbit/s (at 25 ms of RTT or less; 1.3
	// Mbit/s at 100 ms), so an epoch held by cwnd needs only
	// MinLimitedBytes: six packets, whose acknowledgements the peer does
	// not delay.
	MinQueueBytes   = 64 << 10
	MinLimitedBytes = 8 << 10
)

// Epoch is what one epoch of a sender's sending showed.
type Epoch struct {
	// Acked is the bytes acknowledged; Limited, those of them acknowledged
	// while the sender was held by the congestion window (data waiting,
	// the window full).
	Acked, Limited uint64
	// RTT is the epoch's smallest RTT sample, PathRTT the path's
	// smallest; 0: none.
	RTT, PathRTT time.Duration
}

// Queued reports a standing queue: in an epoch heavy enough (see
// MinQueueBytes), the smallest RTT above the path's by a quarter of it, at
// least QueueSlack.
func (e Epoch) Queued() bool {
	heavy := e.Acked >= MinQueueBytes || e.Acked >= MinLimitedBytes && e.HeldByCwnd()
	return heavy && e.RTT > 0 && e.PathRTT > 0 && e.RTT-e.PathRTT > max(e.PathRTT/4, QueueSlack)
}

// HeldByCwnd reports that most of the bytes the epoch acknowledged had
// waited for the congestion window.
func (e Epoch) HeldByCwnd() bool { return e.Acked > 0 && 2*e.Limited >= e.Acked }

// Tuner chooses a stripe count one epoch at a time. Until it first sees a
// queue it doubles the count where it would add one, and on that first
// queue it halves it, back to the last count that showed none; from then
// on it adds and drops one at a time. It never goes below its floor.
type Tuner struct {
	n, min, max int
	settled     bool // a queue has been seen
}

// NewTuner returns a tuner at n stripes of at least minN and at most maxN
// (both are clamped to 1..maxN, and n to minN..maxN).
func NewTuner(n, minN, maxN int) *Tuner {
	maxN = max(maxN, 1)
	minN = min(max(minN, 1), maxN)
	return &Tuner{n: min(max(n, minN), maxN), min: minN, max: maxN}
}

// N is the stripe count now.
func (t *Tuner) N() int { return t.n }

// Next is the stripe count after an epoch e run with t.N().
func (t *Tuner) Next(e Epoch) int {
	switch {
	case e.Queued() && !t.settled:
		t.settled = true
		t.n = max(t.n/2, t.min)
	case e.Queued():
		t.n = max(t.n-1, t.min)
	case !e.HeldByCwnd():
	case !t.settled:
		t.n = min(2*t.n, t.max)
	default:
		t.n = min(t.n+1, t.max)
	}
	return t.n
}

// EpochFor is the epoch length on a path of round-trip time rtt.
func EpochFor(rtt time.Duration) time.Duration {
	return max(EpochRTTs*rtt, MinEpoch)
}

package stripes

import (
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

// busy is an epoch held by cwnd without a queue, queue one with a queue.
var (
	busy  = Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 51 * ms, PathRTT: 50 * ms}
	queue = Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 63 * ms, PathRTT: 50 * ms}
)

// counts runs tu through es and returns its count after each.
func counts(tu *Tuner, es ...Epoch) []int {
	var got []int
	for _, e := range es {
		got = append(got, tu.Next(e))
	}
	return got
}

func TestTuner(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		settled bool
		e       Epoch
		want    int
	}{
		{"held by cwnd, no queue: one more", 3, true, busy, 4},
		{"before the first queue: twice as many", 3, false, busy, 6},
		{"at the cap", 16, true, busy, 16},
		{"at the cap before the first queue", 12, false, busy, 16},
		{"held by cwnd half the time", 3, true, Epoch{Acked: 1 << 20, Limited: 1 << 19, RTT: 50 * ms, PathRTT: 50 * ms}, 4},
		{"mostly held by something else", 3, true, Epoch{Acked: 1 << 20, Limited: 1<<19 - 1, RTT: 50 * ms, PathRTT: 50 * ms}, 3},
		{"mostly held by something else, before the first queue", 3, false, Epoch{Acked: 1 << 20, Limited: 1<<19 - 1, RTT: 50 * ms, PathRTT: 50 * ms}, 3},
		{"idle", 3, true, Epoch{PathRTT: 50 * ms}, 3},
		{"standing queue: one fewer", 3, true, queue, 2},
		{"the first queue: half", 8, false, queue, 4},
		{"a queue while the application is the limit", 3, true, Epoch{Acked: 1 << 20, RTT: 63 * ms, PathRTT: 50 * ms}, 2},
		{"never below one", 1, true, Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 80 * ms, PathRTT: 50 * ms}, 1},
		{"never below one, first queue", 1, false, queue, 1},
		{"a quarter of the RTT is not yet a queue", 3, true, Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 62500 * time.Microsecond, PathRTT: 50 * ms}, 4},
		{"short path: the slack, not a quarter", 3, true, Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 5900 * time.Microsecond, PathRTT: 4 * ms}, 4},
		{"short path past the slack", 3, true, Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 6100 * time.Microsecond, PathRTT: 4 * ms}, 2},
		{"no RTT sample this epoch", 3, true, Epoch{Acked: 1 << 20, Limited: 1 << 20, PathRTT: 50 * ms}, 4},
		// Seen at 100 ms and 0.1% loss: epochs between units, their only
		// samples SACKs the peer delayed, read as a queue and settled the
		// tuner at one flow before it had sent a result.
		{"a light epoch's slow samples are not a queue", 3, false, Epoch{Acked: 13732, Limited: 1384, RTT: 311 * ms, PathRTT: 102 * ms}, 3},
		{"nor an almost idle one's", 3, true, Epoch{Acked: 1, RTT: 301 * ms, PathRTT: 100 * ms}, 3},
		{"a queue just heavy enough", 3, true, Epoch{Acked: MinQueueBytes, RTT: 63 * ms, PathRTT: 50 * ms}, 2},
		// A full 1 Mbit/s link acknowledges 12.5 KB in a 100 ms epoch.
		{"a slow link held by cwnd shows its queue", 3, true, Epoch{Acked: 12500, Limited: 12500, RTT: 63 * ms, PathRTT: 20 * ms}, 2},
		{"a slow link's first queue", 8, false, Epoch{Acked: 12500, Limited: 6250, RTT: 63 * ms, PathRTT: 20 * ms}, 4},
		{"one packet held by a one-packet cwnd is not a queue", 3, true, Epoch{Acked: 1452, Limited: 1452, RTT: 301 * ms, PathRTT: 100 * ms}, 4},
		{"no path RTT yet", 3, true, Epoch{Acked: 1 << 20, Limited: 1 << 20, RTT: 80 * ms}, 4},
	} {
		tu := &Tuner{n: tc.n, min: 1, max: 16, settled: tc.settled}
		if got := tu.Next(tc.e); got != tc.want || tu.n != tc.want {
			t.Errorf("%s: next(%+v) from %d = %d, want %d", tc.name, tc.e, tc.n, got, tc.want)
		}
		if queued := tc.e.Queued(); !tu.settled && (tc.settled || queued) {
			t.Errorf("%s: unsettled after a queue", tc.name)
		}
	}
	// A run: doubling to the first queue, then one at a time.
	got := counts(NewTuner(1, 1, 16), busy, busy, busy, queue, busy, busy, queue, Epoch{})
	if want := []int{2, 4, 8, 4, 5, 6, 5, 5}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}

// TestTunerFloor: queues take a tuner with a floor down to it and no
// further, and from there it grows as one without.
func TestTunerFloor(t *testing.T) {
	got := counts(NewTuner(4, 4, 16), queue, busy, busy, queue, queue, queue, busy, Epoch{})
	if want := []int{4, 5, 6, 5, 4, 4, 5, 5}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	got = counts(NewTuner(4, 4, 16), busy, busy, queue)
	if want := []int{8, 16, 8}; !slices.Equal(got, want) {
		t.Errorf("doubling from the floor: counts %v, want %v", got, want)
	}
}

func TestEpochFor(t *testing.T) {
	for rtt, want := range map[time.Duration]time.Duration{
		0:                      MinEpoch,
		time.Millisecond:       MinEpoch,
		50 * time.Millisecond:  200 * time.Millisecond,
		100 * time.Millisecond: 400 * time.Millisecond,
	} {
		if got := EpochFor(rtt); got != want {
			t.Errorf("EpochFor(%v) = %v, want %v", rtt, got, want)
		}
	}
}

func TestNewTuner(t *testing.T) {
	for _, tc := range []struct{ n, minN, maxN, want int }{
		{4, 1, 16, 4}, {0, 1, 16, 1}, {20, 1, 16, 16}, {4, 1, 0, 1},
		{1, 4, 16, 4}, {0, 0, 16, 1}, {8, 20, 16, 16}, {2, 4, 3, 3},
	} {
		if got := NewTuner(tc.n, tc.minN, tc.maxN).N(); got != tc.want {
			t.Errorf("NewTuner(%d, %d, %d).N() = %d, want %d", tc.n, tc.minN, tc.maxN, got, tc.want)
		}
	}
	// The cap holds where the count starts below it.
	if got := NewTuner(3, 1, 5).Next(busy); got != 5 {
		t.Errorf("doubling 3 under a cap of 5 gave %d", got)
	}
}

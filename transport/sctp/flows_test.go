package sctp

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/transporttest"
)

func TestFlowTuner(t *testing.T) {
	const ms = time.Millisecond
	busy := flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 51 * ms, pathRTT: 50 * ms}
	queue := flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 63 * ms, pathRTT: 50 * ms}
	for _, tc := range []struct {
		name    string
		n       int
		settled bool
		e       flowEpoch
		want    int
	}{
		{"held by cwnd, no queue: one more", 3, true, busy, 4},
		{"before the first queue: twice as many", 3, false, busy, 6},
		{"at the cap", MaxFlows, true, busy, MaxFlows},
		{"at the cap before the first queue", 12, false, busy, MaxFlows},
		{"held by cwnd half the time", 3, true, flowEpoch{acked: 1 << 20, limited: 1 << 19, rtt: 50 * ms, pathRTT: 50 * ms}, 4},
		{"mostly held by something else", 3, true, flowEpoch{acked: 1 << 20, limited: 1<<19 - 1, rtt: 50 * ms, pathRTT: 50 * ms}, 3},
		{"mostly held by something else, before the first queue", 3, false, flowEpoch{acked: 1 << 20, limited: 1<<19 - 1, rtt: 50 * ms, pathRTT: 50 * ms}, 3},
		{"idle", 3, true, flowEpoch{pathRTT: 50 * ms}, 3},
		{"standing queue: one fewer", 3, true, queue, 2},
		{"the first queue: half", 8, false, queue, 4},
		{"a queue while the application is the limit", 3, true, flowEpoch{acked: 1 << 20, rtt: 63 * ms, pathRTT: 50 * ms}, 2},
		{"never below one", 1, true, flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 80 * ms, pathRTT: 50 * ms}, 1},
		{"never below one, first queue", 1, false, queue, 1},
		{"a quarter of the RTT is not yet a queue", 3, true, flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 62500 * time.Microsecond, pathRTT: 50 * ms}, 4},
		{"short path: the slack, not a quarter", 3, true, flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 5900 * time.Microsecond, pathRTT: 4 * ms}, 4},
		{"short path past the slack", 3, true, flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 6100 * time.Microsecond, pathRTT: 4 * ms}, 2},
		{"no RTT sample this epoch", 3, true, flowEpoch{acked: 1 << 20, limited: 1 << 20, pathRTT: 50 * ms}, 4},
		// Seen at 100 ms and 0.1% loss: epochs between units, their only
		// samples SACKs the peer delayed, read as a queue and settled the
		// tuner at one flow before it had sent a result.
		{"a light epoch's slow samples are not a queue", 3, false, flowEpoch{acked: 13732, limited: 1384, rtt: 311 * ms, pathRTT: 102 * ms}, 3},
		{"nor an almost idle one's", 3, true, flowEpoch{acked: 1, rtt: 301 * ms, pathRTT: 100 * ms}, 3},
		{"a queue just heavy enough", 3, true, flowEpoch{acked: minQueueBytes, rtt: 63 * ms, pathRTT: 50 * ms}, 2},
		// A full 1 Mbit/s link acknowledges 12.5 KB in a 100 ms epoch.
		{"a slow link held by cwnd shows its queue", 3, true, flowEpoch{acked: 12500, limited: 12500, rtt: 63 * ms, pathRTT: 20 * ms}, 2},
		{"a slow link's first queue", 8, false, flowEpoch{acked: 12500, limited: 6250, rtt: 63 * ms, pathRTT: 20 * ms}, 4},
		{"one packet held by a one-packet cwnd is not a queue", 3, true, flowEpoch{acked: 1452, limited: 1452, rtt: 301 * ms, pathRTT: 100 * ms}, 4},
		{"no path RTT yet", 3, true, flowEpoch{acked: 1 << 20, limited: 1 << 20, rtt: 80 * ms}, 4},
	} {
		tu := &flowTuner{n: tc.n, settled: tc.settled}
		if got := tu.next(tc.e); got != tc.want || tu.n != tc.want {
			t.Errorf("%s: next(%+v) from %d = %d, want %d", tc.name, tc.e, tc.n, got, tc.want)
		}
		if queued := tc.e.queued(); !tu.settled && (tc.settled || queued) {
			t.Errorf("%s: unsettled after a queue", tc.name)
		}
	}
	// A run: doubling to the first queue, then one at a time.
	tu := newFlowTuner()
	var got []int
	for _, e := range []flowEpoch{busy, busy, busy, queue, busy, busy, queue, {}} {
		got = append(got, tu.next(e))
	}
	if want := []int{2, 4, 8, 4, 5, 6, 5, 5}; !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}

func TestFlowEpochFor(t *testing.T) {
	for rtt, want := range map[time.Duration]time.Duration{
		0:                      minFlowEpoch,
		time.Millisecond:       minFlowEpoch,
		50 * time.Millisecond:  200 * time.Millisecond,
		100 * time.Millisecond: 400 * time.Millisecond,
	} {
		if got := flowEpochFor(rtt); got != want {
			t.Errorf("flowEpochFor(%v) = %v, want %v", rtt, got, want)
		}
	}
}

func TestConfigFlows(t *testing.T) {
	for _, n := range []int{-1, MaxFlows + 1} {
		if _, err := (Config{Flows: n}).withDefaults(); err == nil {
			t.Errorf("Flows %d accepted", n)
		}
	}
	for _, n := range []int{0, 1, MaxFlows} {
		if _, err := (Config{Flows: n}).withDefaults(); err != nil {
			t.Errorf("Flows %d: %v", n, err)
		}
	}
}

// TestFixedFlows: Config.Flows sets every association's count, on
// loopback too; the tuned default keeps one there.
func TestFixedFlows(t *testing.T) {
	lc, dc := transport.ListenConfig{Secret: secret}, transport.DialConfig{Secret: secret}
	d, l := loopbackPair(t, New(Config{Flows: 5}), lc, dc)
	for _, a := range []transport.Association{d, l} {
		if got := a.(*Association).Flows(); got != 5 {
			t.Errorf("%s: %d flows, want 5", a.LocalAddr(), got)
		}
	}
	d, l = loopbackPair(t, New(Config{}), lc, dc)
	sendBulk(t, d, l, 8<<20)
	for _, a := range []transport.Association{d, l} {
		if got := a.(*Association).Flows(); got != 1 {
			t.Errorf("%s: %d flows on loopback, want 1", a.LocalAddr(), got)
		}
	}
}

// sendBulk sends n bytes from d to l on stream 0 in 1 MiB messages and
// checks they arrive.
func sendBulk(t *testing.T, d, l transport.Association, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msg := bytes.Repeat([]byte("flows"), 1<<20/5)
	go func() {
		for range n / len(msg) {
			if err := d.Send(ctx, 0, msg); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range n / len(msg) {
		got, err := l.Recv(ctx, 0)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("received %d bytes (err %v), want the %d sent", len(got), err, len(msg))
		}
	}
}

// TestFlowsGrowUnderLoss: through an emulated link with random loss, one
// flow is held by its window while the link idles, so the tuner adds
// flows; through a clean one it keeps few, since one flow fills the link
// and queues.
func TestFlowsGrowUnderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulated link takes a while; not in -short")
	}
	for _, tc := range []struct {
		spec     string
		bytes    int
		min, max int
	}{
		{"rtt=40ms,loss=1%,rate=100M", 24 << 20, 4, MaxFlows},
		{"rtt=40ms,rate=20M", 12 << 20, 1, 3},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			transporttest.UpBed(t, tc.spec)
			d, l := transporttest.AcrossBed(t, New(Config{}), 47621)
			sendBulk(t, d, l, tc.bytes)
			if got := d.(*Association).Flows(); got < tc.min || got > tc.max {
				t.Errorf("the sender runs %d flows after %d MiB, want %d to %d", got, tc.bytes>>20, tc.min, tc.max)
			}
			if got := l.(*Association).Flows(); got != 1 {
				t.Errorf("the receiver, which only acknowledged, runs %d flows", got)
			}
		})
	}
}

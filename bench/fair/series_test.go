package fair

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/tperf"
)

var t0 = time.Unix(1_800_000_000, 0)

// ramp is a series sampled every 100 ms from t0: idle until from, then
// rate bytes a second until to, then idle until end.
func ramp(from, to, end time.Duration, rate float64) Series {
	var s Series
	for t := time.Duration(0); t <= end; t += tperf.SampleEvery {
		active := min(max(t-from, 0), to-from)
		s = append(s, tperf.Sample{At: t0.Add(t), Bytes: int64(rate * active.Seconds())})
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*max(1, math.Abs(b)) }

func TestSeriesRates(t *testing.T) {
	s := ramp(time.Second, 9*time.Second, 10*time.Second, 1e6) // 8 Mbit/s from 1 s to 9 s
	from, to, ok := s.Active()
	if !ok || !from.Equal(t0.Add(time.Second)) || !to.Equal(t0.Add(9*time.Second)) {
		t.Errorf("Active = %v, %v, %v; want 1 s to 9 s", from.Sub(t0), to.Sub(t0), ok)
	}
	if got := s.Mbps(t0.Add(2*time.Second), t0.Add(8*time.Second)); !near(got, 8) {
		t.Errorf("Mbps over 2-8 s = %v, want 8", got)
	}
	// Between samples the count is interpolated: 0.05 s into the ramp.
	if got := s.BytesAt(t0.Add(1050 * time.Millisecond)); !near(got, 50000) {
		t.Errorf("BytesAt(1.05 s) = %v, want 50000", got)
	}
	if got := s.Mbps(t0.Add(0), t0.Add(10*time.Second)); !near(got, 6.4) {
		t.Errorf("Mbps over the whole run = %v, want 6.4 (8 s of 10 at 8)", got)
	}
	if got := s.BytesAt(t0.Add(-time.Hour)); got != 0 {
		t.Errorf("BytesAt before the first sample = %v", got)
	}
	if got := s.BytesAt(t0.Add(time.Hour)); got != 8e6 {
		t.Errorf("BytesAt after the last sample = %v, want 8e6", got)
	}
	bins := s.Bins(t0, t0.Add(10*time.Second+500*time.Millisecond), time.Second)
	if len(bins) != 10 || bins[0] != 0 || !near(bins[1], 8) || !near(bins[8], 8) || bins[9] != 0 {
		t.Errorf("Bins = %v, want 10 of 1 s: 0, eight of 8, 0", bins)
	}
	if _, _, ok := (Series{{At: t0}, {At: t0.Add(time.Second)}}).Active(); ok {
		t.Error("a receiver that got nothing is active")
	}
}

func TestShared(t *testing.T) {
	a := ramp(time.Second, 9*time.Second, 10*time.Second, 1e6)
	b := ramp(2*time.Second, 10*time.Second, 11*time.Second, 1e6)
	from, to, ok := Shared([]Series{a, b})
	if !ok || !from.Equal(t0.Add(2*time.Second)) || !to.Equal(t0.Add(9*time.Second)) {
		t.Errorf("Shared = %v to %v (%v), want 2 s to 9 s", from.Sub(t0), to.Sub(t0), ok)
	}
	c := ramp(9500*time.Millisecond, 10*time.Second, 11*time.Second, 1e6)
	if _, _, ok := Shared([]Series{a, c}); ok {
		t.Error("series that never overlapped share an interval")
	}
	if _, _, ok := Shared([]Series{a, {{At: t0}, {At: t0.Add(time.Second)}}}); ok {
		t.Error("a receiver that got nothing shares an interval")
	}
}

func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5, 5}, 1},
		{[]float64{10, 0}, 0.5},
		{[]float64{1, 1, 1, 1}, 1},
		{[]float64{3, 1}, 16.0 / 20},
		{[]float64{1.3, 1}, 2.3 * 2.3 / (2 * (1.69 + 1))},
		{nil, 0},
		{[]float64{0, 0}, 0},
	} {
		if got := Jain(c.xs); !near(got, c.want) {
			t.Errorf("Jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

// TestMeasure: the rates are over the shared interval less the warm-up
// and the tail; braid's (the first series) over the flows' mean.
func TestMeasure(t *testing.T) {
	braid := ramp(time.Second, 30*time.Second, 31*time.Second, 0.75e6) // 6 Mbit/s
	flow := ramp(2*time.Second, 29*time.Second, 31*time.Second, 0.5e6) // 4 Mbit/s
	var r Result
	if err := r.measure([]Series{braid, flow}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// Shared 2 s to 29 s; less 10 s warm-up and 1 s tail: 12 s to 28 s.
	if !near(r.WindowS, 16) || !near(r.SideMbps, 6) || len(r.FlowMbps) != 1 || !near(r.FlowMbps[0], 4) {
		t.Errorf("window %v s, braid %v, flows %v; want 16 s, 6, [4]", r.WindowS, r.SideMbps, r.FlowMbps)
	}
	if !near(r.Ratio, 1.5) || !near(r.Jain, 100.0/104) {
		t.Errorf("ratio %v, Jain %v; want 1.5, %v", r.Ratio, r.Jain, 100.0/104)
	}
	if len(r.Timeline) != 2 || len(r.Timeline[0]) != 27 || r.Timeline[1][5] != 4 {
		t.Errorf("timeline %v: want two of 27 one-second bins", r.Timeline)
	}
	if err := new(Result).measure([]Series{braid, flow}, 25*time.Second); err == nil {
		t.Error("a warm-up that leaves less than the shortest window was taken")
	}
}

// TestIperf3Series reads a report of iperf3 3.12's server (-J -i 0.1, two
// flows), its last interval placed at the end given.
func TestIperf3Series(t *testing.T) {
	b, err := os.ReadFile("testdata/iperf3-server.json")
	if err != nil {
		t.Fatal(err)
	}
	end := t0.Add(time.Minute)
	ss, err := iperf3Series(b, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 {
		t.Fatalf("%d series, want one per flow (2)", len(ss))
	}
	for i, s := range ss {
		if len(s) != 12 || s[0].Bytes != 0 || s[len(s)-1].Bytes != 12582912 {
			t.Errorf("flow %d: %d samples, %d to %d bytes; want 12, 0 to 12582912", i, len(s), s[0].Bytes, s[len(s)-1].Bytes)
		}
		if d := end.Sub(s[len(s)-1].At); d < 0 || d > 50*time.Microsecond {
			t.Errorf("flow %d ends %v before the end given", i, d)
		}
		if got := s.Mbps(s[0].At, s[0].At.Add(500*time.Millisecond)); got < 95 || got > 110 {
			t.Errorf("flow %d: %v Mbit/s over its first half second, want about 100 (iperf3 said so)", i, got)
		}
	}
	for _, bad := range []string{`{`, `{"intervals":[]}`, `{"error":"unable to connect"}`} {
		if _, err := iperf3Series([]byte(bad), end); err == nil {
			t.Errorf("iperf3Series(%s) took it", bad)
		}
	}
}

package fair

import (
	"context"
	"testing"
	"time"

	"github.com/braidhq/braid/netem"
)

// TestCompetitorsThroughBed runs each kind of TCP competitor alone through
// a 10 Mbit/s, 20 ms path of the bed (root, Linux; skips elsewhere, and
// iperf3's half without iperf3): the bench's own flows and iperf3 -C,
// their senders under the congestion control asked for, and their
// receivers' series, over the interval they all ran, adding up to the
// link's rate.
func TestCompetitorsThroughBed(t *testing.T) {
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	spec, err := netem.Parse("rtt=20ms,rate=10M,cc=cubic")
	if err != nil {
		t.Fatal(err)
	}
	bed, err := netem.Up(spec, netem.Options{Wait: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer bed.Close()
	addr, _ := netem.PathAddrs(0)
	ctx := context.Background()
	const dur = 4 * time.Second
	check := func(name string, c competitor, flows int) {
		t.Helper()
		ss, cc, err := c.wait()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cc != "cubic" || len(ss) != flows {
			t.Fatalf("%s: %d series under %q, want %d under cubic", name, len(ss), cc, flows)
		}
		from, to, ok := Shared(ss)
		if !ok || to.Sub(from) < dur/2 {
			t.Fatalf("%s: the flows ran together for %v (%v)", name, to.Sub(from), ok)
		}
		start := from.Add(time.Second) // slow start
		var sum float64
		for _, s := range ss {
			sum += s.Mbps(start, to)
		}
		t.Logf("%s: %d flows, %.2f Mbit/s together over %v", name, flows, sum, to.Sub(start).Round(time.Millisecond))
		if sum < 8.5 || sum > 10.5 {
			t.Errorf("%s: %.2f Mbit/s together, want about the link's 10", name, sum)
		}
	}
	f, err := startTCPFlows(ctx, 2, "cubic", addr, competitorPort, dur)
	if err != nil {
		t.Fatal(err)
	}
	check("own flows", f, 2)
	if err := hasIperf3(); err != nil {
		t.Skipf("iperf3: %v", err)
	}
	ip, err := startIperf3(ctx, 1, "cubic", addr, competitorPort+1, dur, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	check("iperf3", ip, 1)
}

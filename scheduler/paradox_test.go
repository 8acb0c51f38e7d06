package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/scheduler/schedsim"
)

// paradoxUnits are the unit counts of the paper's figures 13-15.
var paradoxUnits = []int{1, 5, 10, 20, 50, 100, 200, 500}

// The paper's section IV.F: two fast workers (2 streams, 1 time unit per
// unit) and one slow worker (1 stream, 3 time units per unit).
var (
	fast1 = schedsim.Worker{Name: "c1", Streams: 2, UnitTime: time.Second}
	fast2 = schedsim.Worker{Name: "c2", Streams: 2, UnitTime: time.Second}
	slow  = schedsim.Worker{Name: "c3", Streams: 1, UnitTime: 3 * time.Second}
)

type paradoxCase struct {
	name      string
	policy    string
	speculate bool
	cfg       scheduler.Config
}

var paradoxCases = []paradoxCase{
	{name: "equal", policy: "equal"},
	{name: "threads", policy: "threads"},
	{name: "speed", policy: "speed"},
	{name: "dynamic", policy: "dynamic"},
	{name: "dynamic+spec", policy: "dynamic", speculate: true},
	{name: "dynamic+spec1", policy: "dynamic", speculate: true, cfg: scheduler.Config{SpeculateAfter: 1}},
}

func makespan(t *testing.T, pc paradoxCase, units int, ws ...schedsim.Worker) time.Duration {
	t.Helper()
	res, err := schedsim.Run(schedsim.Config{Core: pc.cfg, Workers: ws,
		Jobs: []schedsim.Job{{Name: "j", Policy: pc.policy, Units: units, Speculate: pc.speculate}}})
	if err != nil {
		t.Fatalf("%s, %d units: %v", pc.name, units, err)
	}
	return res.Makespan
}

func TestParadox(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "%-14s %5s %8s %8s\n", "policy", "units", "2 fast", "+slow")
	got := map[string]map[int][2]time.Duration{}
	for _, pc := range paradoxCases {
		got[pc.name] = map[int][2]time.Duration{}
		for _, n := range paradoxUnits {
			two := makespan(t, pc, n, fast1, fast2)
			three := makespan(t, pc, n, fast1, fast2, slow)
			got[pc.name][n] = [2]time.Duration{two, three}
			fmt.Fprintf(&table, "%-14s %5d %8v %8v\n", pc.name, n, two, three)
		}
	}
	t.Log("\n" + table.String())
	for _, n := range paradoxUnits {
		check := func(name string, ok func(two, three time.Duration) bool, want string) {
			if d := got[name][n]; !ok(d[0], d[1]) {
				t.Errorf("%s, %d units: 2 workers %v, 3 workers %v; want %s", name, n, d[0], d[1], want)
			}
		}
		notWorse := func(two, three time.Duration) bool { return three <= two }
		if n >= 5 {
			check("equal", func(two, three time.Duration) bool { return three > two }, "the paradox (3 slower)")
		}
		if n >= 50 {
			check("speed", notWorse, "3 no slower")
		}
		// With the default SpeculateAfter (1.0) a unit still out when the
		// fast workers have done theirs is speculated at once; at 1.5 the
		// duplicate would start half a unit later, which shows at 5 units.
		check("dynamic+spec1", notWorse, "3 no slower")
		check("dynamic+spec", notWorse, "3 no slower")
	}
}

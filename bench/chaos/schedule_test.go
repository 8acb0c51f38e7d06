package chaos

import (
	"slices"
	"testing"
	"time"
)

func TestPlanReplaysFromItsSeed(t *testing.T) {
	a, b := Plan(7, 10*time.Minute, 3), Plan(7, 10*time.Minute, 3)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	if slices.Equal(a, Plan(8, 10*time.Minute, 3)) {
		t.Error("seeds 7 and 8 gave the same schedule")
	}
	kinds := map[FaultKind]int{}
	for i, f := range a {
		kinds[f.Kind]++
		if f.At+f.For > 10*time.Minute {
			t.Errorf("fault %v ends after the schedule", f)
		}
		if i > 0 && f.At <= a[i-1].At {
			t.Errorf("faults out of order: %v after %v", f, a[i-1])
		}
		if f.Worker < 0 || f.Worker >= 3 {
			t.Errorf("fault %v on no worker", f)
		}
	}
	for _, k := range []FaultKind{KillWorker, StopWorker, KillServer, BlackHole, TermWorker, TermServer} {
		if kinds[k] == 0 {
			t.Errorf("10 minutes of seed 7 has no %s: %v", k, kinds)
		}
	}
}

// No two faults hold the same target at once, a server kill overlaps
// nothing, and server kills are 10 s apart.
func TestPlanKeepsFaultsApart(t *testing.T) {
	for seed := range uint64(50) {
		plan := Plan(seed, 5*time.Minute, 3)
		for i, f := range plan {
			for _, g := range plan[:i] {
				overlap := g.At+g.For > f.At
				if !overlap {
					continue
				}
				if f.Kind.onServer() || g.Kind.onServer() || f.Worker == g.Worker {
					t.Fatalf("seed %d: %v overlaps %v", seed, f, g)
				}
			}
			if !f.Kind.onServer() {
				continue
			}
			for _, g := range plan[:i] {
				if g.Kind.onServer() && f.At-g.At < 10*time.Second {
					t.Fatalf("seed %d: server kills %v and %v too close", seed, g, f)
				}
			}
		}
	}
}

// Even a short schedule tries every kind of fault.
func TestPlanStartsWithEveryKind(t *testing.T) {
	for seed := range uint64(20) {
		plan := Plan(seed, 45*time.Second, 3)
		kinds := map[FaultKind]bool{}
		for _, f := range plan {
			kinds[f.Kind] = true
		}
		if len(kinds) != 6 {
			t.Errorf("seed %d: 45 s schedule has only %v: %v", seed, kinds, plan)
		}
	}
}

// A replay from a point keeps exactly the faults from that point on, in
// order, 2 s after its start for the first one that falls on the point.
func TestWindowReplaysAStretch(t *testing.T) {
	plan := Plan(1, 10*time.Minute, 3)
	from := plan[len(plan)/2].At
	got := window(plan, from)
	if len(got) != len(plan)-len(plan)/2 {
		t.Fatalf("window from %v kept %d of %d faults, want %d", from, len(got), len(plan), len(plan)-len(plan)/2)
	}
	if got[0].At != 2*time.Second {
		t.Errorf("first replayed fault at %v, want 2s", got[0].At)
	}
	for i, f := range got {
		want := plan[len(plan)/2+i]
		if f.Kind != want.Kind || f.Worker != want.Worker || f.For != want.For || f.At != want.At-from+2*time.Second {
			t.Errorf("replayed %v, want %v moved %v earlier", f, want, from-2*time.Second)
		}
	}
	if !slices.Equal(window(plan, 0), plan) {
		t.Error("window from 0 changed the schedule")
	}
}

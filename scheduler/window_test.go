package scheduler_test

import (
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// TestWindowGrowsToDefaultMax: a worker that keeps reporting an empty
// queue (one on a long path, waiting for its input) gets its window grown
// one unit a report up to DefaultMaxWindow, 32, and no further (a bound of
// 4 held small units on a 100 ms path to under a third of the rate), and a
// deep queue shrinks it to one.
func TestWindowGrowsToDefaultMax(t *testing.T) {
	if scheduler.DefaultMaxWindow != 32 {
		t.Fatalf("DefaultMaxWindow %d, want 32 (docs/experiments/net-window)", scheduler.DefaultMaxWindow)
	}
	c := scheduler.New(scheduler.Config{})
	now := time.Unix(0, 0)
	step := func(ev scheduler.Event) {
		t.Helper()
		if _, err := c.Step(now, ev); err != nil {
			t.Fatal(err)
		}
	}
	window := func() int { return c.Workers()[0].Window }
	step(scheduler.WorkerUp{Worker: "w", Streams: 2, Ops: []string{"noop"}})
	if got := window(); got != scheduler.DefaultWindow {
		t.Fatalf("window %d at start, want %d", got, scheduler.DefaultWindow)
	}
	for i := range 2 * scheduler.DefaultMaxWindow {
		step(scheduler.Feedback{Worker: "w", QueueDepth: 0, ServiceRate: 100})
		if want := min(scheduler.DefaultWindow+i+1, scheduler.DefaultMaxWindow); window() != want {
			t.Fatalf("window %d after %d empty queues, want %d", window(), i+1, want)
		}
	}
	step(scheduler.Feedback{Worker: "w", QueueDepth: 2*scheduler.DefaultMaxWindow + 1, ServiceRate: 100})
	if got := window(); got != 1 {
		t.Errorf("window %d after a queue deeper than both streams' windows, want 1", got)
	}
}

// TestWindowHeldByTransit: an empty queue does not grow the window when
// the unit's transit shows it waited on the way (a full link, a busy
// transport): above the worker's floor by a quarter, at least
// TransitSlack. Within that, or unmeasured, it grows. The floor is the
// least transit of the last one to two TransitPeriods.
func TestWindowHeldByTransit(t *testing.T) {
	c := scheduler.New(scheduler.Config{})
	now := time.Unix(0, 0)
	window := func() int { return c.Workers()[0].Window }
	if _, err := c.Step(now, scheduler.WorkerUp{Worker: "w", Streams: 1, Ops: []string{"noop"}}); err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	for i, tc := range []struct {
		after   time.Duration // since the last
		transit time.Duration
		grows   bool
	}{
		{0, 100 * ms, true}, // the first: the floor
		{0, 124 * ms, true}, // within a quarter
		{0, 126 * ms, false},
		{0, 0, true},      // unmeasured
		{0, 4 * ms, true}, // a new floor
		{0, 6 * ms, true}, // within TransitSlack
		{0, 4*ms + scheduler.TransitSlack + ms, false},
		{scheduler.TransitPeriod, 50 * ms, false}, // the floor of the last period stands
		{scheduler.TransitPeriod, 50 * ms, true},  // and is forgotten in the next
		{0, 63 * ms, false},
	} {
		now = now.Add(tc.after)
		before := window()
		if _, err := c.Step(now, scheduler.Feedback{Worker: "w", ServiceRate: 100, Transit: tc.transit}); err != nil {
			t.Fatal(err)
		}
		if got := window() - before; got != 0 && got != 1 || (got == 1) != tc.grows {
			t.Errorf("%d: transit %v: window %d → %d, want it grown: %v", i, tc.transit, before, window(), tc.grows)
		}
	}
}

package scheduler_test

import (
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// TestWindowGrowsToDefaultMax: a worker that keeps reporting an empty
// queue (one on a long path, waiting for its input) gets its window grown
// one unit a report up to DefaultMaxWindow and no further, and a deep
// queue shrinks it to one.
func TestWindowGrowsToDefaultMax(t *testing.T) {
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

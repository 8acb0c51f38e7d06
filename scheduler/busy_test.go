package scheduler_test

import (
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// TestBusyStreams: a worker's busy streams are those holding a unit, however
// many the window lets each hold, and none once the units are answered or
// the worker is down.
func TestBusyStreams(t *testing.T) {
	c := scheduler.New(scheduler.Config{Window: 2})
	now := time.Unix(0, 0)
	step := func(ev scheduler.Event) scheduler.Output {
		t.Helper()
		out, err := c.Step(now, ev)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	step(scheduler.WorkerUp{Worker: "w", Streams: 3, Ops: []string{"noop"}})
	if b, n := c.BusyStreams("w"), c.InFlight("w"); b != 0 || n != 0 {
		t.Fatalf("an idle worker: %d busy streams, %d units in flight; want none", b, n)
	}
	out := step(scheduler.JobAdded{Job: "j", Policy: "dynamic", Units: []scheduler.Unit{{Index: 0, Op: "noop"}, {Index: 1, Op: "noop"}}})
	if len(out.Assign) != 2 {
		t.Fatalf("%d units sent, want 2", len(out.Assign))
	}
	busy := map[int]bool{}
	for _, a := range out.Assign {
		busy[a.Stream] = true
	}
	if b := c.BusyStreams("w"); b != len(busy) || c.InFlight("w") != 2 {
		t.Errorf("%d busy streams, %d units in flight; want %d and 2", b, c.InFlight("w"), len(busy))
	}
	for _, a := range out.Assign {
		step(scheduler.UnitFinished{Job: "j", Unit: a.Unit, Worker: "w", Stream: a.Stream, Compute: time.Millisecond})
	}
	if b := c.BusyStreams("w"); b != 0 {
		t.Errorf("%d busy streams after every result, want 0", b)
	}
	step(scheduler.JobAdded{Job: "k", Policy: "dynamic", Units: []scheduler.Unit{{Index: 0, Op: "noop"}}})
	step(scheduler.WorkerDown{Worker: "w"})
	if b := c.BusyStreams("w"); b != 0 {
		t.Errorf("%d busy streams on a worker that is down, want 0", b)
	}
	if b := c.BusyStreams("nobody"); b != 0 {
		t.Errorf("%d busy streams on an unknown worker", b)
	}
}

package scheduler_test

import (
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// TestReleasedSizesCount checks that a held unit's size, given when it is
// released, counts against the worker's byte budget.
func TestReleasedSizesCount(t *testing.T) {
	c := scheduler.New(scheduler.Config{Window: 4})
	now := time.Unix(0, 0)
	step := func(ev scheduler.Event) scheduler.Output {
		t.Helper()
		out, err := c.Step(now, ev)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	step(scheduler.WorkerUp{Worker: "w", Streams: 1, Ops: []string{"noop"}, HoldBytes: 150})
	units := make([]scheduler.Unit, 3)
	for i := range units {
		units[i] = scheduler.Unit{Index: i, Op: "noop", Held: true}
	}
	step(scheduler.JobAdded{Job: "j", Policy: "dynamic", Units: units})
	out := step(scheduler.UnitsReleased{Job: "j", Units: []int{0, 1, 2}, Sizes: []int64{100, 100, 100}})
	if len(out.Assign) != 1 {
		t.Fatalf("%d units of 100 bytes sent to a worker that holds 150, want 1", len(out.Assign))
	}
	if ws := c.Workers(); ws[0].Bytes != 100 || ws[0].Budget != 150 {
		t.Errorf("bytes %d, budget %d; want 100 and 150", ws[0].Bytes, ws[0].Budget)
	}
	out = step(scheduler.UnitFinished{Job: "j", Unit: out.Assign[0].Unit, Worker: "w", Compute: time.Millisecond})
	if len(out.Assign) != 1 || c.Workers()[0].Bytes != 100 {
		t.Errorf("after a result: %d sent, %d bytes in flight; want 1 and 100", len(out.Assign), c.Workers()[0].Bytes)
	}
	step(scheduler.WorkerDown{Worker: "w"})
	if b := c.Workers()[0].Bytes; b != 0 {
		t.Errorf("%d bytes still in flight on a worker that is down", b)
	}
}

// TestSetSize: a unit added without a size counts against its worker's
// byte budget once its size is told, and its release gives the bytes back.
func TestSetSize(t *testing.T) {
	c := scheduler.New(scheduler.Config{Window: 4})
	now := time.Unix(0, 0)
	if _, err := c.Step(now, scheduler.WorkerUp{Worker: "w", Streams: 1, Ops: []string{"noop"}, HoldBytes: 150}); err != nil {
		t.Fatal(err)
	}
	out, err := c.Step(now, scheduler.JobAdded{Job: "j", Policy: "dynamic", Units: []scheduler.Unit{{Index: 0, Op: "noop"}, {Index: 1, Op: "noop"}}})
	if err != nil || len(out.Assign) != 2 {
		t.Fatalf("unsized units: %d sent (%v), want both (windows alone bound them)", len(out.Assign), err)
	}
	c.SetSize("j", 0, 100)
	c.SetSize("j", 0, 999) // known already: ignored
	c.SetSize("j", 1, -5)  // not a size: ignored
	if b, _ := c.Bytes("w"); b != 100 {
		t.Fatalf("%d bytes in flight after SetSize, want 100", b)
	}
	if _, err := c.Step(now, scheduler.UnitFinished{Job: "j", Unit: 0, Worker: "w", Compute: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Bytes("w"); b != 0 {
		t.Errorf("%d bytes in flight after the result, want 0", b)
	}
}

// TestSetSizeOpensTheBudget: sizes told late feed the mean unit size, so
// a worker that says nothing of its memory still gets a byte budget.
func TestSetSizeOpensTheBudget(t *testing.T) {
	c := scheduler.New(scheduler.Config{Window: 8})
	now := time.Unix(0, 0)
	if _, err := c.Step(now, scheduler.WorkerUp{Worker: "w", Streams: 2, Ops: []string{"noop"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Step(now, scheduler.JobAdded{Job: "j", Policy: "dynamic", Units: []scheduler.Unit{{Index: 0, Op: "noop"}}}); err != nil {
		t.Fatal(err)
	}
	c.SetSize("j", 0, 100)
	if b, budget := c.Bytes("w"); b != 100 || budget != 300 {
		t.Errorf("bytes %d, budget %d; want 100 and 300 (a unit per stream and one more)", b, budget)
	}
}

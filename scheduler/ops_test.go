package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// newStepper returns a core and a step function that fails the test on
// an error.
func newStepper(t *testing.T) (*scheduler.Core, func(scheduler.Event) scheduler.Output) {
	c := scheduler.New(scheduler.Config{})
	now := time.Unix(0, 0)
	return c, func(ev scheduler.Event) scheduler.Output {
		t.Helper()
		out, err := c.Step(now, ev)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// TestCompositeOp: a unit whose Op joins names with '+' (a pipeline's)
// goes only to a worker that runs every one of them, and waits, saying so,
// while none is up.
func TestCompositeOp(t *testing.T) {
	c, step := newStepper(t)
	step(scheduler.WorkerUp{Worker: "blur-only", Streams: 2, Ops: []string{"blur"}})
	step(scheduler.WorkerUp{Worker: "sobel-only", Streams: 2, Ops: []string{"sobel", "@wasm"}})
	out := step(scheduler.JobAdded{Job: "j", Policy: "dynamic", Units: []scheduler.Unit{{Index: 0, Op: "blur+sobel"}, {Index: 1, Op: "blur+sobel"}}})
	if len(out.Assign) != 0 {
		t.Fatalf("units placed on workers that lack an operation: %+v", out.Assign)
	}
	if p, _ := c.Progress("j"); !strings.Contains(p.Waiting, `"blur+sobel"`) {
		t.Fatalf("waiting %q", p.Waiting)
	}
	out = step(scheduler.WorkerUp{Worker: "both", Streams: 2, Ops: []string{"sobel", "blur"}})
	if len(out.Assign) != 2 {
		t.Fatalf("%d units placed, want 2", len(out.Assign))
	}
	for _, a := range out.Assign {
		if a.Worker != "both" {
			t.Fatalf("unit placed on %s", a.Worker)
		}
	}
}

// TestHeldUnits: held units wait for UnitsReleased, in any order, and a
// held unit with a dependency needs both.
func TestHeldUnits(t *testing.T) {
	c, step := newStepper(t)
	step(scheduler.WorkerUp{Worker: "w", Streams: 4, Ops: []string{"op"}})
	units := []scheduler.Unit{{Index: 0, Op: "op", Held: true}, {Index: 1, Op: "op", Held: true},
		{Index: 2, Op: "op"}, {Index: 3, Op: "op", Held: true, Deps: []int{2}}}
	out := step(scheduler.JobAdded{Job: "j", Policy: "dynamic", Units: units})
	if len(out.Assign) != 1 || out.Assign[0].Unit != 2 {
		t.Fatalf("placed %+v, want unit 2 alone", out.Assign)
	}
	if out = step(scheduler.UnitsReleased{Job: "j", Units: []int{1, 3}}); len(out.Assign) != 1 || out.Assign[0].Unit != 1 {
		t.Fatalf("after releasing 1 and 3: %+v, want unit 1 (3 waits for 2)", out.Assign)
	}
	a := out.Assign[0]
	step(scheduler.UnitFinished{Job: "j", Unit: 1, Worker: a.Worker, Stream: a.Stream, Attempt: a.Attempt})
	if _, err := c.Step(time.Unix(0, 0), scheduler.UnitsReleased{Job: "j", Units: []int{9}}); err == nil {
		t.Fatal("releasing a unit out of range was accepted")
	}
	if p, _ := c.Progress("j"); p.Pending != 2 || p.Running != 1 || p.Done != 1 {
		t.Fatalf("progress %+v", p)
	}
}

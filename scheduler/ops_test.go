package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// TestCompositeOp: a unit whose Op joins names with '+' (a pipeline's)
// goes only to a worker that runs every one of them, and waits, saying so,
// while none is up.
func TestCompositeOp(t *testing.T) {
	c := scheduler.New(scheduler.Config{})
	now := time.Unix(0, 0)
	step := func(ev scheduler.Event) scheduler.Output {
		t.Helper()
		out, err := c.Step(now, ev)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
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

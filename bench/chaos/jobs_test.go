package chaos

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	inproc "github.com/braidhq/braid/cluster"
)

// The checker passes the fault-free results of repeat jobs of one unit
// (whose result is the unit's output) and of several (a manifest), and of
// a tiled job; it flags a result that is not the fault-free one.
func TestCheckFaultFreeJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := inproc.Start(ctx, inproc.Config{Logger: slog.New(slog.DiscardHandler),
		Workers: []inproc.WorkerSpec{{Name: "w1", Threads: 2, Transport: "tcpn"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	want, err := computeExpected()
	if err != nil {
		t.Fatal(err)
	}
	if err := upload(ctx, cl.Client); err != nil {
		t.Fatal(err)
	}
	specs := []api.JobSpec{
		{Op: "blur", Input: want.gif, Params: repeatParams, Repeat: 1},
		{Op: "blur", Input: want.gif, Params: repeatParams, Repeat: 3},
		{Op: "blur", Input: want.png, Params: tiledParams, Tiles: tiles},
	}
	var accepted []string
	for _, spec := range specs {
		j, err := cl.Client.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Client.Wait(ctx, j.ID, nil); err != nil {
			t.Fatal(err)
		}
		accepted = append(accepted, j.ID)
	}
	v := check(ctx, cl.Client, accepted, want)
	if v.jobs != 3 || v.tiled != 1 || v.units != 1+3+9 || len(v.violations) != 0 {
		t.Errorf("check: %d jobs (%d tiled), %d units, violations %q; want 3 (1), 13, none", v.jobs, v.tiled, v.units, v.violations)
	}
	want.unit = want.png // not what the repeat jobs give
	if v := check(ctx, cl.Client, accepted, want); len(v.violations) < 2 {
		t.Errorf("check against wrong outputs found only %q", v.violations)
	}
}

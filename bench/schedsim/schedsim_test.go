package schedsim

import (
	"context"
	"testing"
	"time"
)

// TestShortSweep runs a small sweep and the memory measurement: every
// point finishes its job, the figures are filled in, and the forgotten job
// leaves (almost) nothing behind.
func TestShortSweep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{Workers: []int{3, 30}, Units: 3000, MemUnits: 20_000, MemWorkers: 4, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 || res.Provenance == nil {
		t.Fatalf("result %+v", res)
	}
	for _, p := range res.Points {
		t.Log(p)
		if p.Stopped || p.Done != 3000 || p.Assigned < p.Done || p.AssignmentsPerSec <= 0 || p.NsPerUnit <= 0 || p.PeakHeapBytes == 0 {
			t.Errorf("point %+v", p)
		}
	}
	if len(res.Memory) != 2 {
		t.Fatalf("memory %+v, want listed and repeat", res.Memory)
	}
	for _, m := range res.Memory {
		t.Log(m)
		if m.RunningBytesPerUnit <= 0 || (m.Form == "listed" && m.AddedBytesPerUnit <= 0) {
			t.Errorf("memory %+v: want the job (and a listed job's event) to take some", m)
		}
		if m.RunningBytesPerUnit > 200 || m.FinishedBytesPerUnit > 200 {
			t.Errorf("memory %+v: more than 200 B a unit", m)
		}
		if m.ForgottenBytes > 1<<20 {
			t.Errorf("%d bytes left after Forget", m.ForgottenBytes)
		}
	}
}

// TestUnitsPerWorker: a proportional sweep sizes each point's job by its
// workers.
func TestUnitsPerWorker(t *testing.T) {
	res, err := Run(context.Background(), Config{Workers: []int{2, 5}, UnitsPerWorker: 40, MemUnits: -1, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Points {
		if p.Units != 40*p.Workers || p.Done != p.Units {
			t.Errorf("point %+v, want %d units done", p, 40*p.Workers)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Workers: []int{0}}, {Policy: "fastest"}, {Units: -1}, {Streams: -2}} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

// TestScale is the internet-scale run made small enough for make test:
// 2,000 workers of mixed speeds, one in ten unable to run the job, and a
// job of 100,000 units, with the simulator checking the core's promises
// throughout (each unit accepted once, none sent to a worker that cannot
// run it, no window overfilled).
func TestScale(t *testing.T) {
	res, err := Run(context.Background(), Config{Workers: []int{2000}, Units: 100_000, MemUnits: -1, Budget: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Points[0]
	t.Log(p)
	if p.Stopped || p.Done != p.Units || p.Assigned != p.Units {
		t.Errorf("point %+v: want every unit done, each sent once", p)
	}
}

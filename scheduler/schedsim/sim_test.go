package schedsim_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler/schedsim"
)

func mixed(n int) []schedsim.Worker {
	ws := make([]schedsim.Worker, n)
	for k := range ws {
		ws[k] = schedsim.Worker{Name: fmt.Sprintf("w%03d", k), Streams: 1 + k%2, UnitTime: time.Duration(1+k%4) * time.Millisecond}
	}
	return ws
}

// TestMeasureCoreChangesNothing: timing the core's calls gives the same
// run, and a time only when asked for.
func TestMeasureCoreChangesNothing(t *testing.T) {
	cfg := schedsim.Config{Workers: mixed(5), Jobs: []schedsim.Job{{Name: "j", Policy: "dynamic", Units: 500}}, Jitter: 0.2, Seed: 3}
	plain, err := schedsim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MeasureCore = true
	timed, err := schedsim.Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Makespan != timed.Makespan || plain.Assigned != timed.Assigned || plain.CoreCalls != timed.CoreCalls {
		t.Errorf("timed run %+v differs from %+v", timed, plain)
	}
	if plain.CoreTime != 0 || timed.CoreTime <= 0 || timed.Units != 500 {
		t.Errorf("core time %v untimed, %v timed; %d units", plain.CoreTime, timed.CoreTime, timed.Units)
	}
}

// TestStop: a run that Stop ends returns ErrStopped and what it did.
func TestStop(t *testing.T) {
	asked := 0
	res, err := schedsim.Run(schedsim.Config{Workers: mixed(3), Jobs: []schedsim.Job{{Name: "j", Policy: "dynamic", Units: 1000}},
		Stop: func() bool { asked++; return asked > 50 }})
	if !errors.Is(err, schedsim.ErrStopped) {
		t.Fatalf("err %v, want ErrStopped", err)
	}
	if res.Units == 0 || res.Units >= 1000 {
		t.Errorf("%d units done when stopped, want some", res.Units)
	}
}

// TestManyWorkers runs more workers than FullCheckWorkers, some going down
// and coming back, with byte budgets and sizes told late: the checks on
// the workers each step touches hold.
func TestManyWorkers(t *testing.T) {
	ws := mixed(2 * schedsim.FullCheckWorkers)
	for k := range ws {
		ws[k].HoldBytes = 3000
		if k%7 == 3 {
			ws[k].DownAt, ws[k].UpAt = time.Duration(k)*time.Millisecond, time.Duration(3*k)*time.Millisecond
		}
	}
	res, err := schedsim.Run(schedsim.Config{Workers: ws, Jitter: 0.3, Feedback: true, Jobs: []schedsim.Job{
		{Name: "a", Policy: "speed", Units: 3000, Size: 1000},
		{Name: "b", Policy: "dynamic", Units: 3000, Size: 700, LateSize: true, Speculate: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Units != 6000 {
		t.Errorf("%d units accepted, want 6000", res.Units)
	}
}

// TestBadConfig: workers without streams or with one name twice, jobs with
// one name twice, are refused.
func TestBadConfig(t *testing.T) {
	for _, cfg := range []schedsim.Config{
		{Workers: []schedsim.Worker{{Name: "w", UnitTime: time.Second}}},
		{Workers: []schedsim.Worker{{Name: "w", Streams: 1, UnitTime: time.Second}, {Name: "w", Streams: 1, UnitTime: time.Second}}},
		{Workers: mixed(1), Jobs: []schedsim.Job{{Name: "j", Policy: "dynamic", Units: 1}, {Name: "j", Policy: "dynamic", Units: 1}}},
	} {
		if _, err := schedsim.Run(cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}

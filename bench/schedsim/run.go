package schedsim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/braidhq/braid/internal/benchout"
	sim "github.com/braidhq/braid/scheduler/schedsim"
)

// Point is one size of the sweep.
type Point struct {
	Workers int `json:"workers"`
	// Units is the job's size, Done the units accepted: fewer when the
	// point ran out of its budget (Stopped).
	Units   int  `json:"units"`
	Done    int  `json:"done"`
	Stopped bool `json:"stopped,omitempty"`
	// Assigned counts assignments (a unit sent again after a requeue or as
	// a speculative copy counts again).
	Assigned int `json:"assigned"`
	// CoreWallSeconds is the wall time spent in the core's methods,
	// WallSeconds the point's whole run, the simulator included, and
	// CPUSeconds the CPU time of the thread that ran it (user and system).
	CoreWallSeconds float64 `json:"core_wall_s"`
	WallSeconds     float64 `json:"wall_s"`
	CPUSeconds      float64 `json:"cpu_s"`
	// CoreSeconds is the core's CPU time, estimated as CPUSeconds ×
	// CoreWallSeconds ÷ WallSeconds: on a machine shared with other work
	// the wall time inside a call includes time the thread waited for a
	// CPU, and that waiting falls on the core's calls and the simulator's
	// alike.
	CoreSeconds float64 `json:"core_s"`
	// AssignmentsPerSec is Assigned ÷ CoreSeconds: the core's rate, and
	// AssignmentsPerWallSec Assigned ÷ CoreWallSeconds.
	AssignmentsPerSec     float64 `json:"assignments_per_s"`
	AssignmentsPerWallSec float64 `json:"assignments_per_wall_s"`
	// NsPerUnit is CoreSeconds per unit done, in nanoseconds.
	NsPerUnit float64 `json:"core_ns_per_unit"`
	// MallocsPerUnit is the whole process's heap allocations per unit
	// done, the simulator's included.
	MallocsPerUnit float64 `json:"mallocs_per_unit"`
	// PeakHeapBytes is the most heap in use seen during the point
	// (sampled about once a second), the simulator's included.
	PeakHeapBytes uint64 `json:"peak_heap_bytes"`
	// Makespan is the job's virtual time.
	Makespan time.Duration `json:"makespan_ns"`
}

func (p Point) String() string {
	s := fmt.Sprintf("workers %7d  units %10d  done %10d  %10.0f assignments/s (%.0f a wall s)  %7.0f ns/unit  %5.1f allocs/unit  peak heap %6.0f MiB  core %6.1f s  cpu %6.1f s  wall %6.1f s",
		p.Workers, p.Units, p.Done, p.AssignmentsPerSec, p.AssignmentsPerWallSec, p.NsPerUnit, p.MallocsPerUnit,
		float64(p.PeakHeapBytes)/(1<<20), p.CoreSeconds, p.CPUSeconds, p.WallSeconds)
	if p.Stopped {
		s += "  (budget ran out)"
	}
	return s
}

// Result is a whole sweep.
type Result struct {
	Policy     string               `json:"policy"`
	Streams    int                  `json:"streams"`
	Points     []Point              `json:"points"`
	Memory     []Memory             `json:"memory,omitempty"`
	Provenance *benchout.Provenance `json:"provenance"`
}

// Run runs the sweep, then the memory measurement. A point that fails
// (the core broke a promise) ends the sweep with its error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(); err != nil {
		return Result{}, err
	}
	here := benchout.Here()
	res := Result{Policy: cfg.Policy, Streams: cfg.Streams, Provenance: &here}
	for _, n := range cfg.Workers {
		p, err := runPoint(ctx, cfg, n)
		if err != nil {
			return res, fmt.Errorf("bench schedsim: %d workers: %w", n, err)
		}
		res.Points = append(res.Points, p)
		if cfg.OnPoint != nil {
			cfg.OnPoint(p)
		}
	}
	for _, form := range []string{"listed", "repeat"} {
		if cfg.MemUnits <= 0 {
			break
		}
		m, err := measureMemory(cfg, form)
		if err != nil {
			return res, fmt.Errorf("bench schedsim: memory, %s: %w", form, err)
		}
		res.Memory = append(res.Memory, m)
		if cfg.OnMemory != nil {
			cfg.OnMemory(m)
		}
	}
	return res, nil
}

// workers are n simulated workers of mixed speeds: 1, 2, 3 or 4 ms a unit
// in turn, named so that name order is their order. One in ten runs
// another operation than the job's: it must get none of its units, and
// cost nothing.
func workers(n, streams int) []sim.Worker {
	ws := make([]sim.Worker, n)
	for k := range ws {
		ws[k] = sim.Worker{Name: fmt.Sprintf("w%06d", k), Streams: streams,
			UnitTime: time.Duration(1+k%4) * time.Millisecond, Ops: []string{"op"}}
		if k%10 == 9 {
			ws[k].Ops = []string{"other"}
		}
	}
	return ws
}

func runPoint(ctx context.Context, cfg Config, n int) (Point, error) {
	p := Point{Workers: n, Units: cfg.units(n)}
	settle()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := &heapPeak{}
	runtime.LockOSThread() // so that the thread's CPU time is the run's
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	start := time.Now()
	deadline := start.Add(cfg.Budget)
	scfg := sim.Config{
		Workers: workers(n, cfg.Streams),
		Jobs:    []sim.Job{{Name: "j", Policy: cfg.Policy, Units: p.Units, Speculate: cfg.Speculate}},
		Jitter:  0.1, Seed: cfg.Seed, MeasureCore: true,
		Stop: func() bool {
			now := time.Now()
			peak.sample(now)
			return ctx.Err() != nil || now.After(deadline)
		},
	}
	res, err := sim.Run(scfg)
	p.Stopped = errors.Is(err, sim.ErrStopped)
	if err != nil && !p.Stopped {
		return p, err
	}
	if err := ctx.Err(); err != nil {
		return p, err
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	p.WallSeconds = time.Since(start).Seconds()
	p.CPUSeconds = (threadCPU() - cpu0).Seconds()
	p.Done, p.Assigned, p.Makespan = res.Units, res.Assigned, res.Makespan
	p.CoreWallSeconds = res.CoreTime.Seconds()
	p.CoreSeconds = p.CoreWallSeconds // where the thread's CPU time is not known
	if p.WallSeconds > 0 && p.CPUSeconds > 0 {
		p.CoreSeconds = p.CPUSeconds * p.CoreWallSeconds / p.WallSeconds
	}
	if p.CoreSeconds > 0 {
		p.AssignmentsPerSec = float64(p.Assigned) / p.CoreSeconds
		p.AssignmentsPerWallSec = float64(p.Assigned) / p.CoreWallSeconds
	}
	if p.Done > 0 {
		p.NsPerUnit = p.CoreSeconds * 1e9 / float64(p.Done)
		p.MallocsPerUnit = float64(after.Mallocs-before.Mallocs) / float64(p.Done)
	}
	p.PeakHeapBytes = max(peak.max, after.HeapInuse)
	return p, nil
}

// heapPeak samples the heap in use about once a second.
type heapPeak struct {
	last time.Time
	max  uint64
}

func (h *heapPeak) sample(now time.Time) {
	if now.Sub(h.last) < time.Second {
		return
	}
	h.last = now
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	h.max = max(h.max, m.HeapInuse)
}

// settle collects garbage and returns freed memory, so that a point starts
// from what is live.
func settle() {
	runtime.GC()
	debug.FreeOSMemory()
}

// heapInuse is the heap in use after a collection.
func heapInuse() uint64 {
	settle()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

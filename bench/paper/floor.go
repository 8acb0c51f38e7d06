package paper

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// Floor is braid's compute floor for the workload on this machine: the
// single-thread time of one unit divided by the cores the workers can use.
// OpMS is wall-clock time in this run (so it carries the machine's load);
// OpCPUMS is the thread's CPU time, what the op costs on an idle core.
//
// ParallelMS is the same op with no braid at all: ParallelThreads
// goroutines of this process run it at once (as many as the 2 × 2 workers
// have threads), and ParallelMS is wall time ÷ ops. Its distance from the
// floor is what the machine loses when every core runs the op (shared
// caches and memory bandwidth, time slicing); braid's distance from it is
// braid's own cost.
type Floor struct {
	OpMS            float64 `json:"op_ms"`
	OpCPUMS         float64 `json:"op_cpu_ms"`
	Samples         int     `json:"samples"`
	Cores           int     `json:"cores"`
	FloorMS         float64 `json:"floor_ms"`
	CPUFloorMS      float64 `json:"cpu_floor_ms"`
	ParallelMS      float64 `json:"parallel_ms,omitempty"`
	ParallelThreads int     `json:"parallel_threads,omitempty"`
}

// measureFloor runs the unit's operation n times on one locked thread.
func measureFloor(n, cores int) (Floor, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	gif, p := samples.GIF(), ops.Params{"sigma": "2"}
	if _, err := ops.Run("blur", p, gif); err != nil { // warm-up
		return Floor{}, fmt.Errorf("paper: blur: %w", err)
	}
	wall, cpu := make([]float64, n), make([]float64, n)
	for i := range wall {
		t0, c0 := time.Now(), threadCPU()
		if _, err := ops.Run("blur", p, gif); err != nil {
			return Floor{}, fmt.Errorf("paper: blur: %w", err)
		}
		wall[i], cpu[i] = ms(time.Since(t0)), ms(threadCPU()-c0)
	}
	f := Floor{OpMS: summarize("", 0, wall).Median, OpCPUMS: summarize("", 0, cpu).Median, Samples: n, Cores: cores}
	f.FloorMS, f.CPUFloorMS = f.OpMS/float64(cores), f.OpCPUMS/float64(cores)
	return f, nil
}

// measureParallel runs the unit's operation n times on each of k
// goroutines at once and returns the wall time per op.
func measureParallel(n, k int) (float64, error) {
	gif, p := samples.GIF(), ops.Params{"sigma": "2"}
	errs := make([]error, k)
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := range k {
		wg.Go(func() {
			for range n {
				if _, err := ops.Run("blur", p, gif); err != nil {
					errs[g] = fmt.Errorf("paper: blur: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return ms(time.Since(t0)) / float64(n*k), errors.Join(errs...)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// threadCPU is the calling thread's CPU time. CLOCK_THREAD_CPUTIME_ID
// counts in nanoseconds; getrusage(RUSAGE_THREAD) counts in scheduler ticks
// (4 ms here), too coarse for a 6 ms operation.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

package scheduler_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// BenchmarkSteadyState measures one result cycle of a busy core — a
// UnitFinished step and a Progress call, as the server makes for every
// result — with 2 workers × 2 streams working through one job at a time
// (a fresh job is added when one is done and the done one forgotten).
// The cost per cycle should not depend on the job's size.
func BenchmarkSteadyState(b *testing.B) {
	for _, policy := range scheduler.PolicyNames {
		for _, units := range []int{2_000, 20_000, 200_000} {
			b.Run(fmt.Sprintf("%s/units=%d", policy, units), func(b *testing.B) {
				benchSteadyState(b, policy, units)
			})
		}
	}
}

// steady drives a core with results in the order their units were sent.
type steady struct {
	tb      testing.TB
	core    *scheduler.Core
	now     time.Time
	policy  string
	units   []scheduler.Unit // the same for every job
	jobs    int
	job     string
	flight  []scheduler.Assignment // FIFO of units in flight
	results int
	// speeds, if set, gives worker k (named w%06d) a compute time of
	// (1 + k%4) ms, for a core of that many workers.
	speeds int
	// speculate sets the jobs' Speculate, and makes each cycle end with a
	// Tick, as the server calls it while a job speculates.
	speculate bool
}

func benchSteadyState(b *testing.B, policy string, units int) {
	s := &steady{tb: b, core: scheduler.New(scheduler.Config{}), now: time.Unix(0, 0),
		policy: policy, units: make([]scheduler.Unit, units)}
	for i := range s.units {
		s.units[i] = scheduler.Unit{Index: i, Op: "op"}
	}
	for _, w := range []string{"w0", "w1"} {
		s.step(scheduler.WorkerUp{Worker: w, Streams: 2, Ops: []string{"op"}})
	}
	s.addJob()
	b.ReportAllocs()
	for b.Loop() {
		s.cycle()
	}
}

func (s *steady) addJob() {
	s.job = fmt.Sprintf("j%d", s.jobs)
	s.jobs++
	s.step(scheduler.JobAdded{Job: s.job, Policy: s.policy, Speculate: s.speculate, Units: s.units})
}

// cycle returns the oldest unit in flight, then asks for progress.
func (s *steady) cycle() {
	a := s.flight[0]
	s.flight = s.flight[1:]
	s.results++
	compute := time.Millisecond + time.Duration(s.results%7)*10*time.Microsecond
	if s.speeds > 0 {
		k, _ := strconv.Atoi(a.Worker[1:])
		compute = time.Duration(1+k%4)*time.Millisecond + time.Duration(s.results%7)*10*time.Microsecond
	}
	out := s.step(scheduler.UnitFinished{Job: a.Job, Unit: a.Unit, Worker: a.Worker,
		Stream: a.Stream, Attempt: a.Attempt, Compute: compute})
	if _, ok := s.core.Progress(a.Job); !ok {
		s.tb.Fatalf("no progress for %s", a.Job)
	}
	if len(out.JobsDone) > 0 {
		s.core.Forget(a.Job)
		s.addJob()
	}
	if s.speculate {
		s.now = s.now.Add(250 * time.Microsecond)
		s.flight = append(s.flight, s.core.Tick(s.now).Assign...)
	}
}

func (s *steady) step(ev scheduler.Event) scheduler.Output {
	s.now = s.now.Add(250 * time.Microsecond)
	out, err := s.core.Step(s.now, ev)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.flight = append(s.flight, out.Assign...)
	return out
}

// BenchmarkWorkers measures one result cycle (as BenchmarkSteadyState) on
// a core with many workers of one stream each and mixed speeds: the cost
// per unit should not grow with the number of workers.
func BenchmarkWorkers(b *testing.B) {
	for _, policy := range []string{"dynamic", "equal"} {
		for _, n := range []int{10, 100, 1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/workers=%d", policy, n), func(b *testing.B) {
				benchWorkers(b, policy, n)
			})
		}
	}
}

func benchWorkers(b *testing.B, policy string, workers int) {
	s := &steady{tb: b, core: scheduler.New(scheduler.Config{}), now: time.Unix(0, 0),
		policy: policy, units: make([]scheduler.Unit, max(200_000, 20*workers))}
	for i := range s.units {
		s.units[i] = scheduler.Unit{Index: i, Op: "op"}
	}
	for k := range workers {
		s.step(scheduler.WorkerUp{Worker: fmt.Sprintf("w%06d", k), Streams: 1, Ops: []string{"op"}})
	}
	s.speeds = workers
	s.addJob()
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := threadCPU()
	for b.Loop() {
		s.cycle()
	}
	if cpu := threadCPU() - cpu; cpu > 0 {
		// On a shared machine ns/op counts time the thread waited for a
		// CPU; this does not.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkWorkerMemory reports the heap the core holds per worker: up,
// and more with a job running that fills every window (its units' records
// and the rankings placement keeps). Each op brings 10,000 workers up on a
// fresh core.
func BenchmarkWorkerMemory(b *testing.B) {
	const n = 10_000
	names := make([]string, n)
	for k := range names {
		names[k] = fmt.Sprintf("w%06d", k)
	}
	var up, busy float64
	for b.Loop() {
		h0 := liveHeap()
		c := scheduler.New(scheduler.Config{})
		for _, w := range names {
			if _, err := c.Step(time.Unix(0, 0), scheduler.WorkerUp{Worker: w, Streams: 1, Ops: []string{"op"}}); err != nil {
				b.Fatal(err)
			}
		}
		h1 := liveHeap()
		if _, err := c.Step(time.Unix(0, 0), scheduler.JobAdded{Job: "j", Policy: "dynamic",
			Repeat: scheduler.Repeat{Count: 10 * n, Op: "op"}}); err != nil {
			b.Fatal(err)
		}
		h2 := liveHeap()
		runtime.KeepAlive(c)
		up += float64(int64(h1)-int64(h0)) / n
		busy += float64(int64(h2)-int64(h1)) / n
	}
	b.ReportMetric(up/float64(b.N), "B/worker-up")
	b.ReportMetric(busy/float64(b.N), "B/worker-busy")
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

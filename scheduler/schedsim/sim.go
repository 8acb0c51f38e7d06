// Package schedsim is a small discrete-event simulator that drives a
// scheduler.Core with workers of given speeds, for tests and for
// reproducing the paper's experiments without machines. Each worker stream
// runs the units sent to it one at a time in arrival order; a unit takes the
// worker's UnitTime (times a seeded jitter). Time is virtual and the run is
// deterministic.
//
// Run also checks the core's promises as it goes and returns an error when
// one breaks: every unit accepted exactly once, no unit sent to a worker
// that cannot run its operation, no stream given more units than its
// window, every job done.
package schedsim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// Worker is one simulated worker.
type Worker struct {
	Name     string
	Streams  int
	Threads  int           // zero means Streams
	Ops      []string      // zero means {"op"}
	UnitTime time.Duration // compute time of one unit on one stream
	// DownAt, if positive, declares the worker down at that time; UpAt, if
	// later, brings it back. Results it computed for the old association
	// are still delivered (the core must drop them).
	DownAt, UpAt time.Duration
	// HoldBytes is what the worker says it can hold (WorkerUp.HoldBytes):
	// the run fails if more is in flight there, beyond a lone unit.
	HoldBytes int64
}

// Job is one simulated job of Units independent units, added at time 0.
type Job struct {
	Name, Policy string
	Units        int
	Op           string // zero means "op"
	Speculate    bool
	Size         int64 // every unit's input size (Unit.Size)
	// LateSize: the units are added with no size, and Size is given to
	// Core.SetSize when each is sent (as a server does for units on
	// another job's outputs); the run checks that the core counts their
	// bytes, but not that they keep within HoldBytes, since the core cannot
	// bound units it places unsized.
	LateSize bool
}

// Config describes one run.
type Config struct {
	Core    scheduler.Config
	Workers []Worker
	Jobs    []Job
	// Tick is the period of Core.Tick calls (default 1/10 of the fastest
	// UnitTime); Tick is also called after each instant's events.
	Tick time.Duration
	// Jitter spreads unit times uniformly by ±Jitter (0.2 = ±20%), drawn
	// from Seed.
	Jitter float64
	Seed   uint64
	// Feedback makes workers report queue depth and rate after each result.
	Feedback bool
	// Limit stops a run that has not finished (default 1000 h).
	Limit time.Duration
}

// Result summarises a run.
type Result struct {
	Makespan    time.Duration // when the last job was done
	Assigned    int           // assignments, including duplicates
	Speculative int           // speculative duplicates
	Dropped     int           // results dropped by the core
	Accepted    map[string]int
}

var epoch = time.Unix(0, 0).UTC()

type result struct {
	at  time.Duration
	seq int
	gen int // association generation of the worker
	ev  scheduler.UnitFinished
}

type queue []result

func (q queue) Len() int { return len(q) }
func (q queue) Less(a, b int) bool {
	if q[a].at != q[b].at {
		return q[a].at < q[b].at
	}
	return q[a].seq < q[b].seq
}
func (q queue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *queue) Push(x any)   { *q = append(*q, x.(result)) }
func (q *queue) Pop() (x any) { x, *q = (*q)[len(*q)-1], (*q)[:len(*q)-1]; return x }
func (q queue) peek() result  { return q[0] }

type simWorker struct {
	Worker
	up   bool
	gen  int
	busy []time.Duration // per stream: when its last unit finishes
	own  []int           // per stream: units outstanding on this association
	ops  map[string]bool
	// bytes is the input bytes outstanding on this association, which the
	// core's figure (Core.Bytes) must equal; sizedBytes those of units
	// sized when added, which must stay within HoldBytes.
	bytes, sizedBytes int64
}

type sim struct {
	cfg      Config
	core     *scheduler.Core
	now      time.Duration
	q        queue
	seq      int
	workers  map[string]*simWorker
	order    []*simWorker
	rng      *rand.Rand
	accepted map[string]map[int]bool
	open     map[string]bool
	res      Result
}

// Run simulates cfg until every job is done.
func Run(cfg Config) (Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return Result{}, err
	}
	for len(s.open) > 0 {
		if s.now > s.cfg.Limit {
			return s.res, fmt.Errorf("schedsim: %d jobs not done after %v", len(s.open), s.cfg.Limit)
		}
		if err := s.advance(); err != nil {
			return s.res, err
		}
	}
	return s.res, s.checkAll()
}

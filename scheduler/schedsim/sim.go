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
//
// The simulator's own cost per event does not grow with the number of
// workers or units (the promises are checked on the workers an event
// touches; on every worker too in runs of at most FullCheckWorkers), so a
// run of 100,000 workers and millions of units measures the core.
package schedsim

import (
	"errors"
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

// Job is one simulated job of Units independent units, added at time 0: a
// repeat job (scheduler.Repeat), or with Listed, its units listed one by
// one.
type Job struct {
	Name, Policy string
	Units        int
	Op           string // zero means "op"
	Speculate    bool
	Listed       bool
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
	// Stop, if set, is asked between instants whether to end the run
	// early (a wall-clock budget); Run then returns ErrStopped and the
	// result so far.
	Stop func() bool
	// MeasureCore times the calls that drive the core (Result.CoreTime)
	// with the monotonic clock: it changes nothing in the run.
	MeasureCore bool
	// NewCore, if set, makes the core (default scheduler.New), so that
	// tests can run a reference core the same way.
	NewCore func(scheduler.Config) *scheduler.Core
	// Observe, if set, is called with each output of the core, in order.
	Observe func(scheduler.Output)
}

// FullCheckWorkers: in runs of at most this many workers, the core's count
// of bytes in flight is checked on every worker after every step, not only
// on the workers the step touched.
const FullCheckWorkers = 64

// ErrStopped is returned by Run when Config.Stop ended it.
var ErrStopped = errors.New("schedsim: stopped")

// Result summarises a run.
type Result struct {
	Makespan    time.Duration // when the last job was done
	Assigned    int           // assignments, including duplicates
	Speculative int           // speculative duplicates
	Dropped     int           // results dropped by the core
	Accepted    map[string]int
	// Units is the units accepted, over all jobs.
	Units int
	// CoreTime is the wall time spent in the core's Step, Tick and SetSize
	// (with Config.MeasureCore), and CoreCalls how many calls that was;
	// the simulator's checks through the core's read-only methods are not
	// counted.
	CoreTime  time.Duration
	CoreCalls int
}

var epoch = time.Unix(0, 0).UTC()

type result struct {
	at  time.Duration
	seq int
	gen int // association generation of the worker
	ev  scheduler.UnitFinished
}

// queue is a min-heap of results by (at, seq).
type queue []result

func (q queue) less(a, b int) bool {
	if q[a].at != q[b].at {
		return q[a].at < q[b].at
	}
	return q[a].seq < q[b].seq
}

func (q *queue) push(r result) {
	*q = append(*q, r)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (q *queue) pop() result {
	h := *q
	r, n := h[0], len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.less(l, m) {
			m = l
		}
		if l+1 < n && h.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return r
}

func (q queue) peek() result { return q[0] }

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

// simJob is a job and which of its units were accepted.
type simJob struct {
	Job
	accepted bitset
	count    int
	done     bool // in a JobsDone
}

// change is a worker coming up (up) or going down at a time.
type change struct {
	at time.Duration
	w  *simWorker
	up bool
}

type sim struct {
	cfg     Config
	core    *scheduler.Core
	now     time.Duration
	q       queue
	seq     int
	workers map[string]*simWorker
	order   []*simWorker
	changes []change // by time, then by worker order
	rng     *rand.Rand
	jobs    map[string]*simJob
	open    int
	res     Result
	clock   time.Time // the origin of CoreTime's readings
}

// Run simulates cfg until every job is done.
func Run(cfg Config) (Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return s.result(), err
	}
	for s.open > 0 {
		if s.now > s.cfg.Limit {
			return s.result(), fmt.Errorf("schedsim: %d jobs not done after %v", s.open, s.cfg.Limit)
		}
		if s.cfg.Stop != nil && s.cfg.Stop() {
			return s.result(), ErrStopped
		}
		if err := s.advance(); err != nil {
			return s.result(), err
		}
	}
	return s.result(), s.checkAll()
}

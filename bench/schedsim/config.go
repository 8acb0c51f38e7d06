package schedsim

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// Config describes a sweep. Zero values mean the documented defaults.
type Config struct {
	// Workers are the sweep's sizes (default 10, 100, 1,000, 10,000 and
	// 100,000).
	Workers []int
	// Units is each point's job size (default 1,000,000), unless
	// UnitsPerWorker is set: then a point of N workers runs N ×
	// UnitsPerWorker units.
	Units, UnitsPerWorker int
	// Policy is the job's assignment policy (default dynamic).
	Policy string
	// Streams is each worker's streams (default 1).
	Streams int
	// Speculate turns on end-of-job speculation.
	Speculate bool
	// Budget bounds each point's wall time (default 5 minutes); a point
	// that runs out reports the units it got through.
	Budget time.Duration
	// MemUnits is the job size of the memory measurement (default
	// 1,000,000; -1: none), on MemWorkers workers (default 100): a job of
	// listed units and a repeat job.
	MemUnits, MemWorkers int
	// Seed draws the unit times' jitter (±10%).
	Seed uint64
	// OnPoint and OnMemory, if set, are called with each point and memory
	// figure as it is done.
	OnPoint  func(Point)
	OnMemory func(Memory)
}

// Defaults for the zero Config.
var (
	DefaultWorkers = []int{10, 100, 1_000, 10_000, 100_000}
)

const (
	DefaultUnits      = 1_000_000
	DefaultBudget     = 5 * time.Minute
	DefaultMemWorkers = 100
)

// ErrConfig is returned by Run for a Config it cannot run.
var ErrConfig = errors.New("bench schedsim: bad config")

func (c *Config) defaults() error {
	if len(c.Workers) == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Units == 0 {
		c.Units = DefaultUnits
	}
	if c.Policy == "" {
		c.Policy = "dynamic"
	}
	if c.Streams == 0 {
		c.Streams = 1
	}
	if c.Budget == 0 {
		c.Budget = DefaultBudget
	}
	if c.MemUnits == 0 {
		c.MemUnits = DefaultUnits
	}
	if c.MemWorkers == 0 {
		c.MemWorkers = DefaultMemWorkers
	}
	switch {
	case slices.ContainsFunc(c.Workers, func(n int) bool { return n < 1 }):
		return fmt.Errorf("%w: workers %v: want each at least 1", ErrConfig, c.Workers)
	case c.Units < 1 || c.UnitsPerWorker < 0:
		return fmt.Errorf("%w: want units ≥ 1 and units per worker ≥ 0", ErrConfig)
	case !slices.Contains(scheduler.PolicyNames, c.Policy):
		return fmt.Errorf("%w: policy %q: want one of %v", ErrConfig, c.Policy, scheduler.PolicyNames)
	case c.Streams < 1 || c.Budget < 0 || c.MemWorkers < 1:
		return fmt.Errorf("%w: want streams ≥ 1, budget ≥ 0, mem workers ≥ 1", ErrConfig)
	}
	return nil
}

// units is the job size of a point of n workers.
func (c *Config) units(n int) int {
	if c.UnitsPerWorker > 0 {
		return n * c.UnitsPerWorker
	}
	return c.Units
}

package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/braidhq/braid/bench/schedsim"
	"github.com/braidhq/braid/internal/benchout"
)

// runBenchSchedsim sweeps the scheduling core alone over the number of
// workers, in virtual time, and measures its memory per unit.
func runBenchSchedsim(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench schedsim", "[--workers N,N,…] [--units U | --units-per-worker K] [--policy P] [--budget D] [--json-out FILE]", e)
	var cfg schedsim.Config
	workers := fs.String("workers", "10,100,1000,10000,100000", "the sweep's numbers of workers, comma-separated")
	fs.IntVar(&cfg.Units, "units", schedsim.DefaultUnits, "units of the job at each size")
	fs.IntVar(&cfg.UnitsPerWorker, "units-per-worker", 0, "if set, a point of N workers runs N × this many units instead")
	fs.StringVar(&cfg.Policy, "policy", "dynamic", "the job's assignment policy")
	fs.IntVar(&cfg.Streams, "streams", 1, "streams per worker")
	fs.BoolVar(&cfg.Speculate, "speculate", false, "end-of-job speculation")
	fs.DurationVar(&cfg.Budget, "budget", schedsim.DefaultBudget, "wall time a point may take; one that runs out reports what it did")
	fs.IntVar(&cfg.MemUnits, "mem-units", schedsim.DefaultUnits, "units of the job whose memory is measured (-1: none)")
	fs.IntVar(&cfg.MemWorkers, "mem-workers", schedsim.DefaultMemWorkers, "workers of the memory measurement")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the unit times' jitter")
	jsonOut := fs.String("json-out", "", "write the results as JSON to `FILE` (with the run's provenance)")
	if err := parse(fs, args); err != nil {
		return err
	}
	for _, s := range splitList(*workers) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("bench schedsim: --workers: %q is not a number", s)
		}
		cfg.Workers = append(cfg.Workers, n)
	}
	cfg.OnPoint = func(p schedsim.Point) { fmt.Fprintln(e.stdout, p) }
	cfg.OnMemory = func(m schedsim.Memory) { fmt.Fprintln(e.stdout, m) }
	res, err := schedsim.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *jsonOut != "" {
		return benchout.WriteJSON(*jsonOut, res)
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/chaos"
	"github.com/braidhq/braid/internal/transports"
)

func runBenchChaos(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench chaos", "[--duration D] [--seed S] [--transport LIST]", e)
	duration := fs.Duration("duration", 2*time.Minute, "how long to inject faults, per transport")
	seed := fs.Uint64("seed", uint64(time.Now().UnixNano()%1e6), "seed of the fault schedule (printed; the same seed replays the same schedule)")
	tlist := fs.String("transport", transports.Default, "workers' transports, comma-separated; one run each: "+strings.Join(transports.Names, ", "))
	workers := fs.Int("workers", 3, "workers")
	threads := fs.Int("threads", 2, "threads per worker")
	units := fs.Int("units", 200, "units per repeat job")
	liveness := fs.Duration("liveness", 3*time.Second, "dead-peer bound given to the server and the workers")
	dir := fs.String("dir", "", "keep data and logs here (default: a temporary directory, kept only if the run fails)")
	plan := fs.Bool("plan", false, "print the fault schedule and exit")
	from := fs.Duration("from", 0, "replay the schedule from this point (its faults before are skipped; run until --duration)")
	quiet := fs.Bool("quiet", false, "do not print each fault as it happens")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *plan {
		for _, f := range chaos.Plan(*seed, *duration, *workers) {
			if f.At < *from {
				continue
			}
			fmt.Fprintln(e.stdout, f)
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	failed := 0
	for _, t := range strings.Split(*tlist, ",") {
		cfg := chaos.Config{Exe: exe, Transport: strings.TrimSpace(t), Duration: *duration, Seed: *seed, From: *from,
			Workers: *workers, Threads: *threads, Units: *units, Liveness: *liveness, Log: e.stderr}
		if *dir != "" {
			cfg.Dir = *dir + "/" + cfg.Transport
		}
		if *quiet {
			cfg.Log = nil
		}
		rep, err := chaos.Run(ctx, cfg)
		if rep != nil {
			rep.Print(e.stdout)
			fmt.Fprintln(e.stdout)
		}
		if err != nil {
			return err
		}
		if !rep.OK() {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of the runs broke an invariant", failed)
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/braidhq/braid/bench/soak"
)

// runBenchSoak feeds an in-process cluster jobs for a while and prints its
// memory and state.db size as it goes.
func runBenchSoak(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench soak", "[--duration D] [--rate JOBS/S] [--units N] [--every D]", e)
	var cfg soak.Config
	fs.DurationVar(&cfg.Duration, "duration", time.Minute, "how long to submit jobs")
	fs.Float64Var(&cfg.Rate, "rate", 10, "jobs submitted per second")
	fs.IntVar(&cfg.Units, "units", 20, "units per repeat job")
	fs.IntVar(&cfg.BigUnits, "big-units", 100_000, "units of the big jobs, cancelled as soon as submitted")
	fs.DurationVar(&cfg.Every, "every", 10*time.Second, "print a sample this often")
	fs.IntVar(&cfg.RetainJobs, "retain-jobs", 50, "the server's --retain-jobs")
	fs.DurationVar(&cfg.RetainFor, "retain-for", time.Minute, "the server's --retain-for")
	fs.DurationVar(&cfg.GCGrace, "gc-grace", 5*time.Second, "the server's --gc-grace")
	fs.StringVar(&cfg.Transport, "transport", "tcpn", "the workers' transport")
	asJSON := fs.Bool("json", false, "print the samples as JSON at the end instead of lines as they come")
	if err := parse(fs, args); err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(e.stdout, "soak: %v at %.3g jobs/s (repeat ×%d, cancelled ×%d, tiled 2x2), retain %d jobs / %v, gc grace %v\n",
			cfg.Duration, cfg.Rate, cfg.Units, cfg.BigUnits, cfg.RetainJobs, cfg.RetainFor, cfg.GCGrace)
		cfg.OnSample = func(s soak.Sample) { fmt.Fprintln(e.stdout, s) }
	}
	res, err := soak.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, res)
	}
	return nil
}

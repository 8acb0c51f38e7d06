package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/feedback"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/server"
)

// runBenchFeedback is `braid bench feedback`: a worker that cannot keep
// up, bounded by unit windows or by byte budgets (bench/feedback).
func runBenchFeedback(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("braid bench feedback", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	units := fs.Int("units", 24, "units in the job (a repeat job on one input)")
	op := fs.String("op", "blur", "the job's operation; for noop the input is random bytes as large as the image")
	pixels := fs.Int("pixels", 1536, "the input is an image of `N`×N pixels of noise, a PNG of about 3×N² bytes")
	threads := fs.Int("threads", 2, "the worker's threads")
	cpus := fs.Float64("cpus", 0.5, "the worker's CPU quota, in CPUs (cgroup v1; root)")
	window := fs.Int("window", 16, "the server's units in flight per stream")
	tname := fs.String("transport", transports.Default, "data-plane transport")
	modes := fs.String("modes", "windows,bytes", "comma-separated: windows (no byte budgets: --hold -1, --byte-horizon 0), bytes (the defaults)")
	horizon := fs.Duration("byte-horizon", time.Second, "the server's --byte-horizon in the bytes mode")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *units < 1 || *pixels < 16 || *threads < 1 || *window < 1 || *window > server.MaxWindow {
		return fmt.Errorf("bench feedback: want --units ≥ 1, --pixels ≥ 16, --threads ≥ 1 and --window 1 to %d", server.MaxWindow)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	rs, err := feedback.Run(ctx, feedback.Config{Exe: exe, Units: *units, Op: *op, Pixels: *pixels, Threads: *threads,
		CPUs: *cpus, Window: *window, Transport: *tname, Modes: strings.Split(*modes, ","),
		ByteHorizon: byteHorizonConfig(*horizon), Log: e.stderr})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	}
	return feedback.WriteTable(e.stdout, rs)
}

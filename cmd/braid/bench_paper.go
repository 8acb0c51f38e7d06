package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/paper"
)

func runBenchPaper(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench paper", "[--quick] [--out DIR] [--runs N] [--dask | --peer-results FILE]", e)
	cfg := paper.Config{Log: e.stderr, Command: "braid bench paper " + strings.Join(args, " ")}
	fs.StringVar(&cfg.Out, "out", "bench-out/paper", "output directory")
	fs.BoolVar(&cfg.Quick, "quick", false, "smoke run: units 1,5,20, one run")
	fs.IntVar(&cfg.Runs, "runs", 0, "runs per point (default 5; 1 with --quick)")
	units := fs.String("units", "", "comma-separated numbers of units (default 1,5,10,20,50,100,200,500)")
	figs := fs.String("figures", "", "comma-separated figure ids to run, e.g. fig4,fig6 (default all)")
	fs.Float64Var(&cfg.SlowCPUs, "slow-cpus", 0.65, "speed of the slow worker in cores of a normal worker (its quota: this × machine-cpus / 2)")
	fs.Float64Var(&cfg.MachineCPUs, "machine-cpus", 0, "CPU quota of each normal worker in figs 12-16, so each is a machine of its own (default min(2, 0.375 × cores); negative: uncapped)")
	fs.BoolVar(&cfg.NoSlow, "no-slow", false, "skip the slow-worker figures")
	fs.StringVar(&cfg.PeerResults, "peer-results", "", "Dask results JSON to draw on figs 8-9")
	dask := fs.Bool("dask", false, "run bench/peers/dask_blur.py (needs its requirements.txt) and draw it")
	python := fs.String("python", "python3", "python for --dask")
	render := fs.Bool("render", false, "only redraw the figures and REPORT.md of the run in --out (e.g. with --peer-results)")
	fs.DurationVar(&cfg.Timeout, "timeout", 45*time.Minute, "bound on the whole run")
	if err := parse(fs, args); err != nil {
		return err
	}
	var err error
	if cfg.Units, err = parseInts(*units); err != nil {
		return err
	}
	if *figs != "" {
		cfg.Figures = strings.Split(*figs, ",")
	}
	if *render {
		_, err := paper.Render(cfg)
		return err
	}
	if *dask {
		if cfg.PeerResults, err = runDask(ctx, cfg, *python); err != nil {
			return err
		}
	}
	res, err := paper.Run(ctx, cfg)
	if res != nil {
		fmt.Fprintf(e.stdout, "wrote %s/REPORT.md and %d figures in %s\n", cfg.Out, len(res.Figures),
			res.Elapsed.Round(time.Second))
	}
	return err
}

func runDask(ctx context.Context, cfg paper.Config, python string) (string, error) {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return "", err
	}
	d := paper.Dask{Python: python, Units: cfg.Units, Runs: cfg.Runs}
	if len(d.Units) == 0 {
		d.Units = paper.PaperUnits
		if cfg.Quick {
			d.Units = paper.QuickUnits
		}
	}
	if d.Runs == 0 {
		d.Runs = map[bool]int{true: 1, false: 5}[cfg.Quick]
	}
	return paper.RunDask(ctx, d, cfg.Out)
}

func parseInts(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--units: %q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

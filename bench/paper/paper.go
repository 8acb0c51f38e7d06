package paper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/internal/cpucg"
)

// Result is what a run measured.
type Result struct {
	Config  Config
	Floor   Floor
	Figures []FigureResult
	// Measured holds every line's runs by line key.
	Measured map[string][]Record
	Peer     []Record
	Notes    []string
	Started  time.Time
	Elapsed  time.Duration
	// LoadAvg is /proc/loadavg when the measurements ended.
	LoadAvg string
	// Provenance is the commit, kernel, Go and flags of the run; set when
	// run.json is first written, and kept from it by Render.
	Provenance *benchout.Provenance
}

// Run measures every selected figure and writes the outputs into cfg.Out.
// A worker set that fails is noted and its lines are left out; Run then
// still writes every file and returns the failures joined.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	res := &Result{Config: cfg, Started: time.Now(), Measured: map[string][]Record{}}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("paper: %w", err)
	}
	if !cfg.NoSlow {
		if err := cpucg.Available(); err != nil {
			cfg.NoSlow = true
			res.note("slow-worker figures (12–16) skipped: %v", err)
		}
	}
	figs := selectFigures(figures(), cfg.Figures, cfg.NoSlow)
	var errs []error
	if err := res.measureFloor(&cfg); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, res.measureAll(ctx, &cfg, figs)...)
	if err := res.loadPeer(cfg.PeerResults); err != nil {
		errs = append(errs, err)
	}
	res.Elapsed = time.Since(res.Started)
	res.LoadAvg = readTrim("/proc/loadavg")
	res.Config = cfg
	errs = append(errs, res.write(figs)...)
	return res, errors.Join(errs...)
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

func (r *Result) measureFloor(cfg *Config) error {
	n := 100
	if cfg.Quick {
		n = 10
	}
	f, err := measureFloor(n, cfg.Cores)
	if err != nil {
		return err
	}
	// As many goroutines as the 2 workers × 2 streams of the floor's target.
	f.ParallelThreads = 4
	if f.ParallelMS, err = measureParallel(n/f.ParallelThreads*2, f.ParallelThreads); err != nil {
		return err
	}
	r.Floor = f
	fmt.Fprintf(cfg.Log, "compute floor: blur %.2f ms (%.2f ms CPU) single-thread ÷ %d cores = %.2f ms/unit; "+
		"%d at once, no braid: %.2f ms/unit\n", f.OpMS, f.OpCPUMS, f.Cores, f.FloorMS, f.ParallelThreads, f.ParallelMS)
	return nil
}

// measureAll measures each distinct line once, grouping lines that share
// worker processes.
func (r *Result) measureAll(ctx context.Context, cfg *Config, figs []figure) []error {
	var errs []error
	for _, group := range setups(figs) {
		fmt.Fprintf(cfg.Log, "workers %s\n", group[0].setup())
		got, err := measureSetup(ctx, cfg, group)
		for k, rs := range got {
			r.Measured[k] = rs
		}
		if err != nil {
			r.note("worker set %s: %v", group[0].setup(), err)
			errs = append(errs, fmt.Errorf("paper: %s: %w", group[0].setup(), err))
		}
		if ctx.Err() != nil {
			return append(errs, fmt.Errorf("paper: out of time: %w", ctx.Err()))
		}
	}
	return errs
}

// setups lists the figures' distinct lines grouped by worker set, in the
// order they first appear.
func setups(figs []figure) [][]line {
	var order []string
	groups := map[string][]line{}
	seen := map[string]bool{}
	for _, f := range figs {
		for _, l := range f.allLines() {
			if seen[l.key()] {
				continue
			}
			seen[l.key()] = true
			if _, ok := groups[l.setup()]; !ok {
				order = append(order, l.setup())
			}
			groups[l.setup()] = append(groups[l.setup()], l)
		}
	}
	out := make([][]line, len(order))
	for i, s := range order {
		out[i] = groups[s]
	}
	return out
}

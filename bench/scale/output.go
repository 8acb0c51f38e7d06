package scale

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/braidhq/braid/internal/benchout"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Sweep runs cfg once per worker count, in the order given; it stops at
// the first run that fails, returning the results so far with the error.
func Sweep(ctx context.Context, cfg Config, workers []int) ([]Result, error) {
	var out []Result
	for _, n := range workers {
		c := cfg
		c.Workers = n
		r, err := Run(ctx, c)
		if err == nil || r.MakespanS > 0 { // measured, if not passed
			out = append(out, r)
		}
		if err != nil {
			return out, fmt.Errorf("%d workers: %w", n, err)
		}
	}
	return out, nil
}

// File is a results file: one run's Result with its provenance, or a
// sweep's runs under one provenance.
type File struct {
	Provenance benchout.Provenance `json:"provenance"`
	Runs       []Result            `json:"runs"`
}

// WriteJSON writes rs to path with the provenance of this process: a lone
// run as its Result (its keys at the top), several as a File.
func WriteJSON(path string, rs []Result) error {
	p := benchout.Here()
	if len(rs) == 1 {
		r := rs[0]
		r.Provenance = &p
		return benchout.WriteJSON(path, r)
	}
	return benchout.WriteJSON(path, File{Provenance: p, Runs: rs})
}

// Plot draws a sweep's figures against the number of workers into dir:
// throughput.svg (units/s), register.svg (seconds to bring them up),
// api.svg (p99 of the list APIs) and memory.svg (server heap per unit).
func Plot(dir string, rs []Result) error {
	figs := []struct {
		name, title, y string
		v              func(Result) float64
	}{
		{"throughput", "Units per second of a no-op job", "units/s", func(r Result) float64 { return r.UnitsPerS }},
		{"register", "Time to register every worker and open its association", "seconds", func(r Result) float64 { return r.RegisterS }},
		{"api", "p99 latency of GET /v1/workers and /v1/jobs (first page) while the job runs", "ms", func(r Result) float64 { return r.APIP99MS }},
		{"memory", "Server heap held per unit of the running job (live, after a collection)", "bytes/unit", func(r Result) float64 { return r.ServerBytesPerUnit }},
		{"idle", "Server CPU of an idle fleet (heartbeats, liveness)", "% of a core", func(r Result) float64 { return r.IdleCPUPct }},
	}
	for _, fg := range figs {
		p := plot.New()
		p.Title.Text = fg.title
		p.X.Label.Text = "simulated workers (log scale)"
		p.Y.Label.Text = fg.y
		p.X.Scale = plot.LogScale{}
		p.Y.Min = 0
		var pts plotter.XYs
		var ticks plot.ConstantTicks
		for _, r := range rs {
			pts = append(pts, plotter.XY{X: float64(r.Workers), Y: fg.v(r)})
			ticks = append(ticks, plot.Tick{Value: float64(r.Workers), Label: strconv.Itoa(r.Workers)})
		}
		p.X.Tick.Marker = ticks
		p.Add(plotter.NewGrid())
		l, dots, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("scale: plot %s: %w", fg.name, err)
		}
		l.Color, dots.Color, dots.Shape = plotutil.Color(0), plotutil.Color(0), plotutil.Shape(0)
		p.Add(l, dots)
		if err := benchout.SavePlot(p, 7*vg.Inch, 4*vg.Inch, filepath.Join(dir, fg.name)); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
	}
	return nil
}

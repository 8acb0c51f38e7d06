package paper

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/braidhq/braid/internal/benchout"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one line of a plot: medians, with the min–max spread.
type series struct {
	label  string
	pts    plotter.XYs
	spread plotter.YErrors
}

// errPts gives plotter.YErrorBars its points and errors.
type errPts struct {
	plotter.XYs
	plotter.YErrors
}

// draw writes figN.svg.
func (fr FigureResult) draw(dir string, units []int) error {
	p := plot.New()
	p.Title.Text = fr.Title
	p.X.Label.Text = "number of units (log scale)"
	p.Y.Label.Text = "average time per unit (ms)"
	if fr.Decreases != nil {
		p.Y.Label.Text = "decrease of the average time per unit (%)"
	} else {
		p.Y.Min = 0
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, unitTicks(units)
	p.X.Min, p.X.Max = float64(slices.Min(units)), float64(slices.Max(units)) // > 0 even with no data
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, false
	for i, s := range fr.series() {
		if err := addSeries(p, i, s); err != nil {
			return fmt.Errorf("paper: %s: %w", fr.ID, err)
		}
	}
	if err := benchout.SavePlot(p, 8*vg.Inch, 5*vg.Inch, filepath.Join(dir, fr.ID)); err != nil {
		return fmt.Errorf("paper: %w", err)
	}
	return nil
}

func unitTicks(units []int) plot.ConstantTicks {
	var ts []plot.Tick
	for _, n := range units {
		ts = append(ts, plot.Tick{Value: float64(n), Label: strconv.Itoa(n)})
	}
	return ts
}

func addSeries(p *plot.Plot, i int, s series) error {
	l, pts, err := plotter.NewLinePoints(s.pts)
	if err != nil {
		return err
	}
	l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
	p.Add(l, pts)
	p.Legend.Add(s.label, l, pts)
	if s.spread == nil {
		return nil
	}
	eb, err := plotter.NewYErrorBars(errPts{s.pts, s.spread})
	if err != nil {
		return err
	}
	eb.Color = plotutil.Color(i)
	p.Add(eb)
	return nil
}

// series turns the figure's summaries or decreases into plot lines.
func (fr FigureResult) series() []series {
	var out []series
	idx := map[string]int{}
	at := func(label string) *series {
		if i, ok := idx[label]; ok {
			return &out[i]
		}
		idx[label] = len(out)
		out = append(out, series{label: label})
		return &out[len(out)-1]
	}
	for _, s := range fr.Summary {
		ser := at(s.Line)
		ser.pts = append(ser.pts, plotter.XY{X: float64(s.Units), Y: s.Median})
		ser.spread = append(ser.spread, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
	}
	for _, d := range fr.Decreases {
		ser := at(d.Line)
		ser.pts = append(ser.pts, plotter.XY{X: float64(d.Units), Y: d.Pct})
	}
	return out
}

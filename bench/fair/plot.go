package fair

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/braidhq/braid/internal/benchout"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// drawAll draws, per loss rate, the median ratio of every setting against
// each competitor (ratio-loss-L), and for the clean path's first run of
// each case both sides' rates second by second (timeline-SIDE-vs-AGAINST);
// it returns the plots' names.
func drawAll(dir string, rec Record, sums []Summary) ([]string, error) {
	var names []string
	var losses []float64
	for _, s := range sums {
		if !slices.Contains(losses, s.LossPct) {
			losses = append(losses, s.LossPct)
		}
	}
	for _, loss := range losses {
		name := "ratio-loss-" + strconv.FormatFloat(loss, 'f', -1, 64)
		if err := drawRatios(filepath.Join(dir, name), rec, sums, loss); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	for _, r := range rec.Results {
		if r.LossPct != 0 || r.Run != 1 || r.Error != "" {
			continue
		}
		name := "timeline-" + fileSafe(r.Side) + "-vs-" + fileSafe(r.Against)
		if err := drawTimeline(filepath.Join(dir, name), r); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// fileSafe makes a setting's name fit a file name: sctp:reno:16 is
// sctp-reno-16.
func fileSafe(s string) string {
	return strings.NewReplacer(":", "-", "/", "-", " ", "").Replace(s)
}

// drawRatios draws one bar per setting and competitor: braid's rate over
// a competing flow's, with the goal as a line.
func drawRatios(base string, rec Record, sums []Summary, loss float64) error {
	var sides, against []string
	for _, s := range sums {
		if s.LossPct != loss {
			continue
		}
		if !slices.Contains(sides, s.Side) {
			sides = append(sides, s.Side)
		}
		if !slices.Contains(against, s.Against) {
			against = append(against, s.Against)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("braid's association ÷ a competing flow, %s%% loss", strconv.FormatFloat(loss, 'f', -1, 64))
	p.Y.Label.Text = "rate ratio (median of runs)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	w := vg.Points(12)
	for i, a := range against {
		vals := make(plotter.Values, len(sides))
		for j, side := range sides {
			for _, s := range sums {
				if s.LossPct == loss && s.Side == side && s.Against == a {
					vals[j] = s.Ratio
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(against)-1)/2)
		p.Add(bars)
		p.Legend.Add("against "+a, bars)
	}
	goal, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: rec.Goal}, {X: float64(len(sides)) - 0.5, Y: rec.Goal}})
	if err != nil {
		return err
	}
	goal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(goal)
	p.Legend.Add(fmt.Sprintf("goal on a clean path: %.1f×", rec.Goal), goal)
	p.NominalX(sides...)
	return benchout.SavePlot(p, vg.Length(max(5, 1.2*float64(len(sides))))*vg.Inch, 4*vg.Inch, base)
}

// drawTimeline draws each side's rate per second over the shared
// interval.
func drawTimeline(base string, r Result) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s beside %d× %s, clean path", r.Side, r.Flows, r.Against)
	p.X.Label.Text = "seconds into the shared interval"
	p.Y.Label.Text = "Mbit/s (receiver, per second)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for i, bins := range r.Timeline {
		if len(bins) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(bins))
		for j, v := range bins {
			pts[j] = plotter.XY{X: float64(j) + 0.5, Y: v}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		label := "braid " + r.Side
		if i > 0 {
			label = fmt.Sprintf("%s flow %d", r.Against, i)
		}
		p.Legend.Add(label, l)
	}
	return benchout.SavePlot(p, 7*vg.Inch, 4*vg.Inch, base)
}

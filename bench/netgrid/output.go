package netgrid

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/benchout"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Record is a grid run as its files keep it (results.json).
type Record struct {
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	Settings []string  `json:"settings"`
	Default  string    `json:"default"`
	// Floor is the share of the best setting's rate the default must
	// reach at every point.
	Floor float64 `json:"floor"`
	// HostCC is the machine's TCP congestion control: TCP settings
	// without @CC, and sctp's and quic's beds, ran under it.
	HostCC  string   `json:"host_cc,omitempty"`
	Results []Result `json:"results"`
	// Provenance is the commit, kernel, Go and flags of the run: Write
	// sets it when it is nil, Load keeps what the file says.
	Provenance *benchout.Provenance `json:"provenance,omitempty"`
}

// jobCounts says how many jobs each point's settings ran: "3", or "3 to
// 10" when `bench net --min-time` ran more where jobs were short.
func jobCounts(points []Point) string {
	lo, hi := 0, 0
	for _, p := range points {
		for _, n := range p.Jobs {
			if lo == 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d to %d", lo, hi)
}

// Write writes results.json, results.csv, RESULTS.md and the plots
// (size-S-loss-L.svg) into dir.
func Write(dir string, run Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if run.Provenance == nil {
		p := benchout.Here()
		run.Provenance = &p
	}
	if err := benchout.WriteJSON(filepath.Join(dir, "results.json"), run); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "results.csv"), run.Results); err != nil {
		return err
	}
	points := Summarize(run.Results, run.Default)
	plots, err := drawAll(dir, run, points)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(Markdown(run, points, plots)), 0o644)
}

// Load reads a run's results.json.
func Load(dir string) (Record, error) {
	var run Record
	if err := benchout.ReadJSON(filepath.Join(dir, "results.json"), &run); err != nil {
		return run, err
	}
	if run.Provenance == nil {
		run.Provenance = benchout.Unrecorded() // not this build's: the run is older
	}
	return run, nil
}

func writeCSV(path string, rs []Result) error {
	g := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	f3 := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	rows := [][]string{{"rtt_ms", "loss_pct", "unit_bytes", "setting", "run", "units", "done", "cut", "seconds",
		"units_per_sec", "p50_ms", "p99_ms"}}
	for _, r := range rs {
		rows = append(rows, []string{g(r.RTTMS), g(r.LossPct), strconv.Itoa(r.Size), r.Setting, strconv.Itoa(r.Run),
			strconv.Itoa(r.Units), strconv.Itoa(r.Done), strconv.FormatBool(r.Cut), f3(r.Seconds),
			f3(r.UnitsPerSec), f3(r.P50MS), f3(r.P99MS)})
	}
	return benchout.WriteCSV(path, rows)
}

// Markdown is RESULTS.md: per unit size, each setting's median rate and
// spread at every condition, the best and its ties marked; the default
// against the best at each point; which settings meet the floor
// everywhere; the units' p99 latencies; the plots.
func Markdown(run Record, points []Point, plots []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# braid bench net: results\n\nRegenerate with:\n\n```sh\n%s\n```\n\n", run.Command)
	fmt.Fprintf(&b, "Started %s. Each cell is the median of a setting's `noop` jobs at that point (%s jobs each here), "+
		"each job's throughput in units/s (units finished ÷ makespan), and in brackets the slowest and the fastest job; "+
		"`*` marks a setting with a job cut at the time budget, whose rate counts the units it finished. "+
		"**Bold** is the best median; `≈` marks a tie with it: a median within the best's spread (at or above its slowest job). "+
		"`NAME@CC`: for tcp, tcpn and ptcp, CC is the hosts' TCP congestion control (the bed's `cc=`); for sctp, its own (`--sctp-cc`). "+
		"The default is `%s`.", run.Started.UTC().Format(time.RFC3339), jobCounts(points), run.Default)
	if run.HostCC != "" {
		fmt.Fprintf(&b, " The machine's TCP congestion control, which sctp's beds ran under, is %s.", run.HostCC)
	}
	b.WriteString("\n\n")
	sizes := sizesOf(points)
	for _, size := range sizes {
		fmt.Fprintf(&b, "## Units of %s: units/s, median (slowest–fastest job)\n\n", SizeLabel(size))
		writeTable(&b, run, points, size, func(p Point, s string) string {
			sp, ok := p.Spreads[s]
			if !ok {
				return "–"
			}
			cell := benchout.UnitRate(sp.Median)
			if p.Cut[s] {
				cell += "*"
			}
			switch {
			case s == p.Best:
				cell = "**" + cell + "**"
			case p.Ties[s]:
				cell += " ≈"
			}
			return cell + " (" + benchout.UnitRate(sp.Min) + "–" + benchout.UnitRate(sp.Max) + ")"
		})
	}
	writeDefault(&b, run, points)
	writeEverywhere(&b, run, points)
	for _, size := range sizes {
		fmt.Fprintf(&b, "## Units of %s: p99 unit latency, ms (median)\n\n", SizeLabel(size))
		writeTable(&b, run, points, size, func(p Point, s string) string {
			v, ok := p.P99MS[s]
			if !ok || v == 0 {
				return "–"
			}
			return strconv.FormatFloat(v, 'f', 0, 64)
		})
	}
	if len(plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "![%s](%s%s)\n", p, p, benchout.PlotExt)
		}
	}
	return b.String()
}

// verdict says how the default fares at p: at or above the floor, a tie
// below it, or below.
func verdict(p Point, def string, floor float64) string {
	if _, ran := p.Rates[def]; !ran {
		return "not run"
	}
	switch {
	case p.Ratio >= floor:
		return fmt.Sprintf("meets (≥ %.2f×)", floor)
	case p.Ties[def]:
		return "meets (a tie: within the best's spread)"
	}
	return "**below**"
}

// writeDefault is the default against the best at each point.
func writeDefault(b *strings.Builder, run Record, points []Point) {
	fmt.Fprintf(b, "## The default against the best\n\n"+
		"| condition | units | best | default `%s` | default ÷ best | verdict |\n|---|---|---|---|---|---|\n", run.Default)
	met := 0
	for _, p := range points {
		def := "not run"
		if sp, ok := p.Spreads[run.Default]; ok {
			def = spreadText(sp)
		}
		v := verdict(p, run.Default, run.Floor)
		if p.Meets(run.Default, run.Floor) {
			met++
		}
		fmt.Fprintf(b, "| %s | %s | `%s` %s | %s | %s | %s |\n", p.Condition, SizeLabel(p.Size), p.Best,
			spreadText(p.Spreads[p.Best]), def, ratioText(p.Ratio), v)
	}
	fmt.Fprintf(b, "\nAt %d of %d points the default reached at least %.2f× the best setting's median or tied with it.\n\n",
		met, len(points), run.Floor)
}

// writeEverywhere lists, for each setting, the points where it fell below
// the floor: those with none could be the default as far as this grid
// can tell.
func writeEverywhere(b *strings.Builder, run Record, points []Point) {
	fmt.Fprintf(b, "## Every setting against the best\n\n"+
		"For each setting, the points where its median fell below %.2f× the best's and did not tie with it, "+
		"and the lowest share of the best's median it had: a setting below at none could be the default as far as this grid can tell.\n\n"+
		"| setting | points below | lowest share |\n|---|---|---|\n", run.Floor)
	for _, s := range run.Settings {
		below, low := 0, math.Inf(1)
		for _, p := range points {
			if best := p.Rates[p.Best]; best > 0 {
				low = min(low, p.Rates[s]/best)
			}
			if !p.Meets(s, run.Floor) {
				below++
			}
		}
		lowText := "–"
		if !math.IsInf(low, 1) {
			lowText = ratioText(low) + "×"
		}
		fmt.Fprintf(b, "| `%s` | %d of %d | %s |\n", s, below, len(points), lowText)
	}
	b.WriteString("\n")
}

// spreadText is a spread as the tables show it: 7.20 (6.90–7.50).
func spreadText(sp Spread) string {
	return benchout.UnitRate(sp.Median) + " (" + benchout.UnitRate(sp.Min) + "–" + benchout.UnitRate(sp.Max) + ")"
}

// writeTable writes one row per setting and a column per condition at
// unit size size.
func writeTable(b *strings.Builder, run Record, points []Point, size int, cell func(Point, string) string) {
	var cols []Point
	for _, p := range points {
		if p.Size == size {
			cols = append(cols, p)
		}
	}
	b.WriteString("| setting |")
	for _, p := range cols {
		fmt.Fprintf(b, " %s |", p.Condition)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	for _, s := range run.Settings {
		fmt.Fprintf(b, "| `%s` |", s)
		for _, p := range cols {
			fmt.Fprintf(b, " %s |", cell(p, s))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// ratioText formats a ratio rounded down to two decimals, so that one
// below the floor never reads as the floor.
func ratioText(r float64) string {
	return strconv.FormatFloat(math.Floor(r*100)/100, 'f', 2, 64)
}

// SizeLabel is a unit size for a reader: 19 KiB, 1 MiB.
func SizeLabel(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

func sizesOf(points []Point) []int {
	var out []int
	for _, p := range points {
		if !slices.Contains(out, p.Size) {
			out = append(out, p.Size)
		}
	}
	return out
}

// drawAll draws, for each unit size and loss rate, units/s against RTT,
// one line per setting; it returns the plots' names.
func drawAll(dir string, run Record, points []Point) ([]string, error) {
	var names []string
	for _, size := range sizesOf(points) {
		var losses []float64
		for _, p := range points {
			if p.Size == size && !slices.Contains(losses, p.Condition.Loss) {
				losses = append(losses, p.Condition.Loss)
			}
		}
		for _, loss := range losses {
			name := fmt.Sprintf("size-%s-loss-%s", strings.ReplaceAll(SizeLabel(size), " ", ""),
				strconv.FormatFloat(loss, 'f', -1, 64))
			if err := draw(filepath.Join(dir, name), run, points, size, loss); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
	}
	return names, nil
}

func draw(base string, run Record, points []Point, size int, loss float64) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("units of %s, %s%% loss", SizeLabel(size), strconv.FormatFloat(loss, 'f', -1, 64))
	p.X.Label.Text = "round-trip time (ms)"
	p.Y.Label.Text = "job throughput (units/s)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	for i, s := range run.Settings {
		var pts plotter.XYs
		for _, pt := range points {
			if v, ok := pt.Rates[s]; ok && pt.Size == size && pt.Condition.Loss == loss {
				pts = append(pts, plotter.XY{X: float64(pt.Condition.RTT) / float64(time.Millisecond), Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color, sc.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s, l, sc)
	}
	return benchout.SavePlot(p, 7*vg.Inch, 4.5*vg.Inch, base)
}

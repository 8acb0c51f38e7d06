package fair

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/internal/benchout"
)

// Summary is one (loss, side, competitor) over its runs: medians and the
// spread of the ratio.
type Summary struct {
	LossPct float64
	Side    string
	Against string
	Runs    int // runs that measured
	Failed  int // runs that failed
	// Ratio is the median of the runs' braid ÷ flow, RatioMin and
	// RatioMax their spread.
	Ratio, RatioMin, RatioMax float64
	// SideMbps, FlowMbps (the competing flows' mean) and Jain are medians.
	SideMbps, FlowMbps, Jain float64
	// LoadMin and LoadMax bound the load averages the runs saw.
	LoadMin, LoadMax float64
}

// Summarize groups results by loss, side and competitor, in the order
// they first appear.
func Summarize(rs []Result) []Summary {
	type key struct {
		loss          float64
		side, against string
	}
	var order []key
	groups := map[key][]Result{}
	for _, r := range rs {
		k := key{r.LossPct, r.Side, r.Against}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	slices.SortStableFunc(order, func(a, b key) int { return cmpFloat(a.loss, b.loss) })
	var out []Summary
	for _, k := range order {
		s := Summary{LossPct: k.loss, Side: k.side, Against: k.against, LoadMin: math.Inf(1)}
		var ratio, side, flow, jain []float64
		for _, r := range groups[k] {
			if r.Error != "" {
				s.Failed++
				continue
			}
			s.Runs++
			ratio, side, flow, jain = append(ratio, r.Ratio), append(side, r.SideMbps), append(flow, r.Mean()), append(jain, r.Jain)
			s.LoadMin, s.LoadMax = min(s.LoadMin, r.Load[0], r.Load[1]), max(s.LoadMax, r.Load[0], r.Load[1])
		}
		if s.Runs > 0 {
			s.Ratio, s.RatioMin, s.RatioMax = median(ratio), slices.Min(ratio), slices.Max(ratio)
			s.SideMbps, s.FlowMbps, s.Jain = median(side), median(flow), median(jain)
		} else {
			s.LoadMin = 0
		}
		out = append(out, s)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return benchout.Quantile(s, 0.5)
}

// Write writes results.json, results.csv, RESULTS.md and the plots into
// dir.
func Write(dir string, rec Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if rec.Provenance == nil {
		p := benchout.Here()
		rec.Provenance = &p
	}
	if err := benchout.WriteJSON(filepath.Join(dir, "results.json"), rec); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "results.csv"), rec.Results); err != nil {
		return err
	}
	sums := Summarize(rec.Results)
	plots, err := drawAll(dir, rec, sums)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(Markdown(rec, sums, plots)), 0o644)
}

// Load reads a run's results.json.
func Load(dir string) (Record, error) {
	var rec Record
	err := benchout.ReadJSON(filepath.Join(dir, "results.json"), &rec)
	return rec, err
}

func writeCSV(path string, rs []Result) error {
	f2 := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	rows := [][]string{{"loss_pct", "side", "against", "flows", "run", "started", "load_start", "load_end", "window_s",
		"side_mbps", "flow_mbps", "ratio", "jain", "competitor_cc", "error"}}
	for _, r := range rs {
		var flows []string
		for _, v := range r.FlowMbps {
			flows = append(flows, f2(v))
		}
		rows = append(rows, []string{strconv.FormatFloat(r.LossPct, 'f', -1, 64), r.Side, r.Against, strconv.Itoa(r.Flows),
			strconv.Itoa(r.Run), r.Started.UTC().Format(time.RFC3339), f2(r.Load[0]), f2(r.Load[1]), f2(r.WindowS),
			f2(r.SideMbps), strings.Join(flows, " "), strconv.FormatFloat(r.Ratio, 'f', 3, 64),
			strconv.FormatFloat(r.Jain, 'f', 3, 64), r.CC, r.Error})
	}
	return benchout.WriteCSV(path, rows)
}

// Markdown is RESULTS.md: the path, then per loss rate a table of every
// setting against every competitor, then which settings meet the goal on
// the clean path.
func Markdown(rec Record, sums []Summary, plots []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# braid bench fair: results\n\nRegenerate with:\n\n```sh\n%s\n```\n\n", rec.Command)
	fmt.Fprintf(&b, "Started %s", rec.Started.UTC().Format(time.RFC3339))
	if p := rec.Provenance; p != nil {
		fmt.Fprintf(&b, " (commit %s, kernel %s)", p.Commit, p.Kernel)
	}
	fmt.Fprintf(&b, ". The path: %s RTT; each direction %s (queue=%s), random loss as each table says. "+
		"braid's association (bulk, %d streams) and %d competing flow(s) each send for %s; each rate is at the receiver, "+
		"over the interval in which both ran less its first %s and last %s. "+
		"Each cell is the median of the runs (%d each), the ratio's spread beside it; load is the machine's one-minute load average "+
		"during the runs.\n\n", fmtMS(rec.RTTMS), rec.Path, rec.Queue, rec.Streams, rec.Flows,
		secs(rec.DurationS), secs(rec.WarmupS), Tail, rec.Runs)
	var losses []float64
	for _, s := range sums {
		if !slices.Contains(losses, s.LossPct) {
			losses = append(losses, s.LossPct)
		}
	}
	for _, loss := range losses {
		title := "Clean path"
		if loss > 0 {
			title = strconv.FormatFloat(loss, 'f', -1, 64) + "% random loss"
		}
		fmt.Fprintf(&b, "## %s\n\n", title)
		b.WriteString("| braid | against | braid Mbit/s | each flow Mbit/s | braid ÷ flow | spread | Jain |")
		if loss == 0 {
			fmt.Fprintf(&b, " ≤ %.1f× |", rec.Goal)
		}
		b.WriteString(" load |\n|---|---|---|---|---|---|---|")
		if loss == 0 {
			b.WriteString("---|")
		}
		b.WriteString("---|\n")
		for _, s := range sums {
			if s.LossPct != loss {
				continue
			}
			writeRow(&b, s, rec.Goal)
		}
		b.WriteString("\n")
	}
	writeVerdict(&b, rec, sums)
	if len(plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "![%s](%s%s)\n", p, p, benchout.PlotExt)
		}
	}
	return b.String()
}

func writeRow(b *strings.Builder, s Summary, goal float64) {
	fmt.Fprintf(b, "| %s | %s |", s.Side, s.Against)
	if s.Runs == 0 {
		fmt.Fprintf(b, " failed (%d runs) | | | | |", s.Failed)
	} else {
		fmt.Fprintf(b, " %.1f | %.1f | %.2f | %.2f–%.2f | %.3f |", s.SideMbps, s.FlowMbps, s.Ratio, s.RatioMin, s.RatioMax, s.Jain)
	}
	if s.LossPct == 0 {
		switch {
		case s.Runs == 0:
			b.WriteString(" – |")
		case s.Ratio <= goal:
			b.WriteString(" yes |")
		default:
			b.WriteString(" **no** |")
		}
	}
	fmt.Fprintf(b, " %.0f–%.0f |", s.LoadMin, s.LoadMax)
	if s.Failed > 0 && s.Runs > 0 {
		fmt.Fprintf(b, " (%d failed)", s.Failed)
	}
	b.WriteString("\n")
}

// writeVerdict says which settings take at most the goal on the clean
// path, against every competitor they met there.
func writeVerdict(b *strings.Builder, rec Record, sums []Summary) {
	var meet, miss []string
	for _, s := range sums {
		if s.LossPct != 0 || s.Runs == 0 {
			continue
		}
		cell := fmt.Sprintf("%s against %s (%.2f×)", s.Side, s.Against, s.Ratio)
		if s.Ratio <= rec.Goal {
			meet = append(meet, cell)
		} else {
			miss = append(miss, cell)
		}
	}
	if len(meet)+len(miss) == 0 {
		return
	}
	fmt.Fprintf(b, "## The goal: at most %.1f× a competing flow on the clean path\n\n", rec.Goal)
	if len(meet) > 0 {
		fmt.Fprintf(b, "Met (median): %s.\n\n", strings.Join(meet, "; "))
	}
	if len(miss) > 0 {
		fmt.Fprintf(b, "Missed (median): %s.\n", strings.Join(miss, "; "))
	}
}

func fmtMS(ms float64) string { return strconv.FormatFloat(ms, 'f', -1, 64) + " ms" }

func secs(s float64) string { return (time.Duration(s * float64(time.Second))).String() }

// Table is the summaries as a plain-text table, for a terminal.
func Table(sums []Summary) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "loss %\tbraid\tagainst\truns\tbraid Mbit/s\tflow Mbit/s\tratio\tspread\tJain\tload\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%.1f\t%.2f\t%.2f–%.2f\t%.3f\t%.0f–%.0f\t\n",
			strconv.FormatFloat(s.LossPct, 'f', -1, 64), s.Side, s.Against, s.Runs, s.SideMbps, s.FlowMbps,
			s.Ratio, s.RatioMin, s.RatioMax, s.Jain, s.LoadMin, s.LoadMax)
	}
	tw.Flush()
	return b.String()
}

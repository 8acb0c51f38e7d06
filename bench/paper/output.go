package paper

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/braidhq/braid/internal/benchout"
)

// FigureResult is one figure's data, as written to figN.json.
type FigureResult struct {
	ID        string     `json:"id"`
	Title     string     `json:"title"`
	Records   []Record   `json:"runs,omitempty"`
	Summary   []Summary  `json:"summary,omitempty"`
	Decreases []Decrease `json:"pct_decrease,omitempty"`
	Missing   []string   `json:"missing,omitempty"`
}

var recordHeader = []string{"figure", "line", "transport", "workers", "threads", "slow_worker", "policy",
	"speculate", "units", "run", "avg_unit_ms", "makespan_ms", "units_per_worker", "mean_queued_ms",
	"mean_compute_ms", "mean_transit_ms", "worker_cpu_ms_per_unit", "server_cpu_ms_per_unit"}

func (r Record) row() []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []string{r.Figure, r.Line, r.Transport, strconv.Itoa(r.Workers), r.Threads, strconv.FormatBool(r.Slow),
		r.Policy, strconv.FormatBool(r.Speculate), strconv.Itoa(r.Units), strconv.Itoa(r.Run), f(r.AvgUnitMS),
		f(r.MakespanMS), perWorker(r.UnitsPerWorker), f(r.QueuedMS), f(r.ComputeMS), f(r.TransitMS),
		f(r.WorkerCPUMS), f(r.ServerCPUMS)}
}

// perWorker formats units per worker as "c1=250;c2=250".
func perWorker(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ";")
}

var decreaseHeader = []string{"figure", "line", "units", "base_median_ms", "median_ms", "pct_decrease"}

func (d Decrease) row(fig string) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	return []string{fig, d.Line, strconv.Itoa(d.Units), f(d.BaseMS), f(d.OtherMS), f(d.Pct)}
}

// write writes figN.csv and figN.json into dir.
func (fr FigureResult) write(dir string) error {
	rows := [][]string{recordHeader}
	for _, r := range fr.Records {
		rows = append(rows, r.row())
	}
	if fr.Decreases != nil || fr.Records == nil {
		rows = [][]string{decreaseHeader}
		for _, d := range fr.Decreases {
			rows = append(rows, d.row(fr.ID))
		}
	}
	if err := writeCSV(filepath.Join(dir, fr.ID+".csv"), rows); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, fr.ID+".json"), fr)
}

func writeCSV(path string, rows [][]string) error {
	if err := benchout.WriteCSV(path, rows); err != nil {
		return fmt.Errorf("paper: %w", err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	if err := benchout.WriteJSON(path, v); err != nil {
		return fmt.Errorf("paper: %w", err)
	}
	return nil
}

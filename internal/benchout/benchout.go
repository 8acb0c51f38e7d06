// Package benchout holds what braid's benchmarks share to report their
// figures: quantiles, the units/s format, CSV and JSON files, plots, and the
// provenance every results file records.
package benchout

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// Quantile is the q-quantile (0..1) of sorted values, interpolating
// linearly between neighbours (the median of an even count is the mean of
// the middle two); NaN for none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// UnitRate formats a rate in units/s: whole units from 100 up, else with
// two decimals, so that a job over a slow link does not show 0.
func UnitRate(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// WriteCSV writes rows to the file at path.
func WriteCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// WriteJSON writes v, indented, to the file at path.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads the JSON file at path into v; a malformed one is an error
// naming the file.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// PlotExt is the one format braid's benchmarks draw their plots in: SVG,
// which GitHub and browsers show inline and which diffs as text.
const PlotExt = ".svg"

// SavePlot writes p, w by h, to base+PlotExt.
func SavePlot(p *plot.Plot, w, h vg.Length, base string) error {
	if err := p.Save(w, h, base+PlotExt); err != nil {
		return fmt.Errorf("benchout: save %s%s: %w", base, PlotExt, err)
	}
	return nil
}

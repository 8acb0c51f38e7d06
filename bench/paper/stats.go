package paper

import (
	"slices"

	"github.com/braidhq/braid/internal/benchout"
)

// Summary is the spread of one line at one number of units.
type Summary struct {
	Line   string  `json:"line"`
	Units  int     `json:"units"`
	N      int     `json:"runs"`
	Median float64 `json:"median_ms"`
	Min    float64 `json:"min_ms"`
	Max    float64 `json:"max_ms"`
	Q1     float64 `json:"q1_ms"`
	Q3     float64 `json:"q3_ms"`
}

// Decrease is one point of a percentage-decrease figure.
type Decrease struct {
	Line    string  `json:"line"`
	Units   int     `json:"units"`
	BaseMS  float64 `json:"base_median_ms"`
	OtherMS float64 `json:"median_ms"`
	Pct     float64 `json:"pct_decrease"`
}

func summarize(label string, units int, vs []float64) Summary {
	s := slices.Clone(vs)
	slices.Sort(s)
	return Summary{Line: label, Units: units, N: len(s), Median: benchout.Quantile(s, 0.5), Min: s[0], Max: s[len(s)-1],
		Q1: benchout.Quantile(s, 0.25), Q3: benchout.Quantile(s, 0.75)}
}

// byUnits groups the average times per unit of rs by number of units.
func byUnits(rs []Record) map[int][]float64 {
	out := map[int][]float64{}
	for _, r := range rs {
		out[r.Units] = append(out[r.Units], r.AvgUnitMS)
	}
	return out
}

// summaries is one Summary per number of units, in units order.
func summaries(label string, rs []Record, units []int) []Summary {
	g := byUnits(rs)
	var out []Summary
	for _, n := range units {
		if vs := g[n]; len(vs) > 0 {
			out = append(out, summarize(label, n, vs))
		}
	}
	return out
}

// medianAt is the median average time per unit of rs at n units.
func medianAt(rs []Record, n int) (float64, bool) {
	vs := byUnits(rs)[n]
	if len(vs) == 0 {
		return 0, false
	}
	return summarize("", n, vs).Median, true
}

// decreases compares other to base at every number of units both have.
func decreases(label string, base, other []Record, units []int) []Decrease {
	var out []Decrease
	for _, n := range units {
		b, ok1 := medianAt(base, n)
		o, ok2 := medianAt(other, n)
		if ok1 && ok2 && b > 0 {
			out = append(out, Decrease{Line: label, Units: n, BaseMS: b, OtherMS: o, Pct: 100 * (b - o) / b})
		}
	}
	return out
}

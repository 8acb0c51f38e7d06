// Package netgrid is the data and the report of `braid bench net`: whole
// jobs through the emulated WAN (package netem) over a grid of round-trip
// times, loss rates and unit sizes, for each of several transport
// settings, and how braid's default setting fares against the best of
// them at each point (issue 10, parts 6 and 7).
//
// Run starts a server in one namespace and the workers in the other for
// each condition and setting (package netcluster), submits one `noop`
// repeat job per unit size (or more, as Job says) and records the job's
// throughput and its units' latencies. Summarize picks each point's best
// setting; Write lays the results out as CSV, JSON, plots and RESULTS.md.
package netgrid

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/sctp"
)

// Setting is one transport configuration of the grid: a transport name,
// with a count for sctp (its flows, --sctp-flows) and ptcp (its stripes,
// --ptcp-stripes). Written "sctp", "sctp:1", "ptcp:8".
type Setting struct {
	Transport string
	Count     int // 0: the transport's default (auto for both)
}

// ParseSetting reads "NAME" or "NAME:N".
func ParseSetting(s string) (Setting, error) {
	name, n, ok := strings.Cut(s, ":")
	st := Setting{Transport: name}
	switch name {
	case "sctp", "ptcp":
	case "tcp", "tcpn", "quic":
		if ok {
			return st, fmt.Errorf("setting %q: only sctp (flows) and ptcp (stripes) take a count", s)
		}
	default:
		return st, fmt.Errorf("setting %q: want sctp, tcp, tcpn, quic or ptcp, with :N after sctp or ptcp", s)
	}
	if ok {
		most := sctp.MaxFlows
		if name == "ptcp" {
			most = ptcp.MaxStripes
		}
		c, err := strconv.Atoi(n)
		if err != nil || c < 1 || c > most {
			return st, fmt.Errorf("setting %q: the count must be 1 to %d", s, most)
		}
		st.Count = c
	}
	return st, nil
}

// String is the setting as ParseSetting reads it.
func (s Setting) String() string {
	if s.Count == 0 {
		return s.Transport
	}
	return s.Transport + ":" + strconv.Itoa(s.Count)
}

// Default is braid's default setting: what a cluster runs without
// transport flags.
var Default = Setting{Transport: "sctp"}

// Condition is one emulated link: both directions alike.
type Condition struct {
	RTT  time.Duration
	Loss float64 // percent
}

// Spec is the condition as `braid net` reads it, with the link's rate.
func (c Condition) Spec(rate string) string {
	return fmt.Sprintf("rtt=%s,loss=%s%%,rate=%s,cc=reno", c.RTT, strconv.FormatFloat(c.Loss, 'f', -1, 64), rate)
}

func (c Condition) String() string {
	return fmt.Sprintf("%s, %s%% loss", c.RTT, strconv.FormatFloat(c.Loss, 'f', -1, 64))
}

// Result is one job of the grid.
type Result struct {
	RTTMS   float64 `json:"rtt_ms"`
	LossPct float64 `json:"loss_pct"`
	Size    int     `json:"unit_bytes"`
	Setting string  `json:"setting"`
	Run     int     `json:"run"`
	Units   int     `json:"units"`
	// Done counts the units finished; below Units when the job reached
	// the time budget (Cut) and was cancelled.
	Done    int     `json:"done"`
	Cut     bool    `json:"cut"`
	Seconds float64 `json:"seconds"` // makespan, or the budget when cut
	// UnitsPerSec is Done / Seconds.
	UnitsPerSec float64 `json:"units_per_sec"`
	// P50MS and P99MS are the finished units' latencies, from the server
	// sending a unit to its result arriving.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// Condition is the result's link.
func (r Result) Condition() Condition {
	return Condition{RTT: time.Duration(r.RTTMS * float64(time.Millisecond)), Loss: r.LossPct}
}

// Point is one (condition, unit size) of the grid with the median rate
// of each setting measured there.
type Point struct {
	Condition Condition
	Size      int
	Rates     map[string]float64 // setting → median units/s
	P99MS     map[string]float64 // setting → median p99 latency
	Cut       map[string]bool    // setting → some run reached the budget
	Jobs      map[string]int     // setting → jobs its medians are over
	Best      string             // the setting with the highest rate
	// Ratio is the default's rate over the best's: 1 when the default is
	// best or nothing finished a unit, 0 when the default was not run.
	Ratio float64
}

// Summarize groups results into points, in the grid's order.
func Summarize(rs []Result, def Setting) []Point {
	type key struct {
		c    Condition
		size int
	}
	var order []key
	byKey := map[key]map[string][]Result{}
	for _, r := range rs {
		k := key{r.Condition(), r.Size}
		if byKey[k] == nil {
			byKey[k] = map[string][]Result{}
			order = append(order, k)
		}
		byKey[k][r.Setting] = append(byKey[k][r.Setting], r)
	}
	var out []Point
	for _, k := range order {
		p := Point{Condition: k.c, Size: k.size, Rates: map[string]float64{}, P99MS: map[string]float64{}, Cut: map[string]bool{},
			Jobs: map[string]int{}}
		for s, runs := range byKey[k] {
			p.Jobs[s] = len(runs)
			var rates, p99 []float64
			for _, r := range runs {
				rates, p99 = append(rates, r.UnitsPerSec), append(p99, r.P99MS)
				p.Cut[s] = p.Cut[s] || r.Cut
			}
			slices.Sort(rates)
			slices.Sort(p99)
			p.Rates[s], p.P99MS[s] = benchout.Quantile(rates, 0.5), benchout.Quantile(p99, 0.5)
		}
		for _, s := range slices.Sorted(maps.Keys(p.Rates)) {
			if p.Best == "" || p.Rates[s] > p.Rates[p.Best] {
				p.Best = s
			}
		}
		p.Ratio = 1 // nothing finished a unit: no setting beat the default
		if best := p.Rates[p.Best]; best > 0 {
			p.Ratio = p.Rates[def.String()] / best
		}
		out = append(out, p)
	}
	return out
}

package paper

import (
	"fmt"
	"slices"
	"strings"
)

// claim sets one of the paper's claims beside our numbers.
type claim struct {
	Fig, Paper, Ours, Verdict, Why string
}

// lineRuns is the runs of figure id's i-th line.
func (r *Result) lineRuns(id string, i int) (line, []Record) {
	for _, f := range figures() {
		if f.ID == id && i < len(f.Lines) {
			return f.Lines[i], r.Measured[f.Lines[i].key()]
		}
	}
	return line{}, nil
}

// big is the numbers of units above 100 that were measured, or the
// largest.
func (r *Result) big() []int {
	var out []int
	for _, n := range r.Config.Units {
		if n > 100 {
			out = append(out, n)
		}
	}
	if out == nil {
		out = []int{slices.Max(r.Config.Units)}
	}
	return out
}

func (r *Result) maxUnits() int { return slices.Max(r.Config.Units) }

// pcts formats the percentage decreases of other vs base at each n.
func (r *Result) pcts(base, other []Record, ns []int) (string, []float64) {
	var parts []string
	var vs []float64
	for _, d := range decreases("", base, other, ns) {
		parts = append(parts, fmt.Sprintf("%d: %+.0f%%", d.Units, d.Pct))
		vs = append(vs, d.Pct)
	}
	return strings.Join(parts, ", "), vs
}

func verdict(ok bool, measured bool) string {
	switch {
	case !measured:
		return "not measured"
	case ok:
		return "**agrees**"
	}
	return "**differs**"
}

// because is the claim's explanation: agree if the verdict agrees, else
// differ.
func because(ok bool, agree, differ string) string {
	if ok {
		return agree
	}
	return differ
}

// capped reports whether the slow-worker figures ran every worker as a
// machine of its own.
func (r *Result) capped() bool { return r.Config.MachineCPUs > 0 }

func all(vs []float64, f func(float64) bool) bool {
	return len(vs) > 0 && !slices.ContainsFunc(vs, func(v float64) bool { return !f(v) })
}

func (r *Result) claims() []claim {
	var cs []claim
	for _, f := range []func() (claim, bool){r.claimFig4, r.claimFig5, r.claimFig7, r.claimFig10,
		r.claimFig11, r.claimFig12, r.claimFig13, r.claimFig14, r.claimFig15, r.claimFig16} {
		if c, ok := f(); ok {
			cs = append(cs, c)
		}
	}
	return cs
}

func (r *Result) claimFig4() (claim, bool) {
	_, rs := r.lineRuns("fig4", 0)
	lo, hi := r.Config.Units[0], r.maxUnits()
	a, ok1 := medianAt(rs, lo)
	b, ok2 := medianAt(rs, hi)
	return claim{Fig: "4", Paper: "the average time per unit falls as the number of units grows (set-up amortised)",
		Ours: fmt.Sprintf("%.1f ms at %d unit(s) → %.1f ms at %d", a, lo, b, hi), Verdict: verdict(b < a, ok1 && ok2),
		Why: because(b < a, "our associations are opened at registration, before the job; what is amortised is "+
			"job start (submit, first dispatch) and the drain at the end",
			"our associations are opened at registration, before the job, so there is little set-up left to "+
				"amortise: job start (submit, first dispatch) is below the run-to-run noise")}, len(rs) > 0
}

func (r *Result) claimFig5() (claim, bool) {
	_, one := r.lineRuns("fig5", 0)
	n := r.maxUnits()
	var parts []string
	var vs []float64
	for i := 1; i < 4; i++ {
		l, rs := r.lineRuns("fig5", i)
		d := decreases("", one, rs, []int{n})
		if len(d) == 1 {
			parts = append(parts, fmt.Sprintf("%d streams %+.0f%%", l.Workers[0].Threads, d[0].Pct))
			vs = append(vs, d[0].Pct)
		}
	}
	ok := all(vs, func(v float64) bool { return v > 10 })
	return claim{Fig: "5", Paper: "2, 3 and 5 streams lower the average time per unit significantly (vs 1)",
		Ours:    fmt.Sprintf("decrease vs 1 stream at %d units: %s", n, strings.Join(parts, ", ")),
		Verdict: verdict(ok, len(vs) > 0),
		Why: because(ok, fmt.Sprintf("2 streams put both of this machine's %d cores to work; past %d threads "+
			"more streams cannot add compute, only queueing, so 3 and 5 gain about what 2 do", r.Config.Cores,
			r.Config.Cores),
			fmt.Sprintf("this machine has %d cores shared with the server: past %d threads more streams "+
				"cannot add compute, only queueing", r.Config.Cores, r.Config.Cores))}, len(one) > 0
}

func (r *Result) claimFig7() (claim, bool) {
	_, tcp := r.lineRuns("fig6", 0)
	l, other := r.lineRuns("fig6", 1)
	s, vs := r.pcts(tcp, other, r.big())
	ok := all(vs, func(v float64) bool { return v > 30 })
	return claim{Fig: "6–7", Paper: "SCTP with 2 streams is over 30% faster than TCP past 100 units",
		Ours:    fmt.Sprintf("%s vs tcp, 2 streams, decrease at %s", l.Workers[0].Transport, s),
		Verdict: verdict(ok, len(vs) > 0),
		Why: because(ok, "the streams of one SCTP association are independent, while tcp's share one "+
			"connection and block each other",
			"both of our transports carry the streams of one association on loopback with no loss; braid's tcp "+
				"multiplexes streams on one connection, so the paper's per-stream gain (no head-of-line blocking "+
				"between streams, no serialisation through one Java stream) has little to bite on here")}, len(tcp) > 0
}

func (r *Result) claimFig10() (claim, bool) {
	_, one := r.lineRuns("fig9", 0)
	_, two := r.lineRuns("fig9", 1)
	s, vs := r.pcts(one, two, r.Config.Units)
	best := slices.Max(append(vs, -1e9))
	return claim{Fig: "9–10", Paper: "2 workers are faster than 1, at best by 40% (never the ideal 50%)",
		Ours:    fmt.Sprintf("best decrease %.0f%% (%s)", best, s),
		Verdict: verdict(best > 20, len(vs) > 0),
		Why: because(best > 20, "a second worker process fills the gaps one worker leaves between a result and "+
			"its next unit",
			fmt.Sprintf("the paper's second worker was a second machine; ours is a second process on the "+
				"same %d cores, so it adds streams but no CPU", r.Config.Cores))}, len(vs) > 0
}

func (r *Result) claimFig11() (claim, bool) {
	_, tcp := r.lineRuns("fig6", 0)
	_, two := r.lineRuns("fig8", 0)
	s, vs := r.pcts(tcp, two, r.Config.Units)
	_, big := r.pcts(tcp, two, r.big())
	ok := all(big, func(v float64) bool { return v > 0 })
	return claim{Fig: "11", Paper: "2 SCTP workers beat 1 TCP worker (decrease shown per units)",
		Ours: fmt.Sprintf("decrease %s", s), Verdict: verdict(ok, len(big) > 0),
		Why: because(ok, "past 100 units 4 streams keep both cores busier than 2, but the gain is small: "+
			"one machine's cores are the bottleneck, not the number of workers (figs 9–10)",
			"one machine's cores are the bottleneck: a second worker adds streams but no CPU (figs 9–10)")}, len(vs) > 0
}

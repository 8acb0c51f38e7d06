package paper

import (
	"fmt"
	"slices"
	"strings"
)

func (r *Result) claimFig12() (claim, bool) {
	_, normal := r.lineRuns("fig12", 0)
	_, slow := r.lineRuns("fig12", 1)
	n := r.maxUnits()
	a, ok1 := medianAt(normal, n)
	b, ok2 := medianAt(slow, n)
	ok := b > 1.5*a
	return claim{Fig: "12", Paper: "a worker on the slower C3 (Pentium 4, 1 CPU) is notably slower than on C1",
		Ours: fmt.Sprintf("slow worker (%.3f CPU quota) %.1f ms/unit vs normal %.1f at %d units: %.1f× slower",
			r.Config.SlowQuota(), b, a, n, b/a), Verdict: verdict(ok, ok1 && ok2),
		Why: because(ok, "the quota emulates C3; see the set-up above", r.quotaMissed())}, ok1 && ok2
}

// quotaMissed explains a slow worker that was not notably slower.
func (r *Result) quotaMissed() string {
	if r.capped() {
		return "the quotas did not hold the two workers apart as planned (see the set-up above); the figures " +
			"that follow inherit this"
	}
	return "the quota did not slow the worker as planned: the normal worker shared the cores with the " +
		"machine's other load (see the set-up above)"
}

// paradox compares figure id's line i (with the slow worker) to line 0.
func (r *Result) paradox(id string, i int) (string, []float64, bool) {
	_, base := r.lineRuns(id, 0)
	_, with := r.lineRuns(id, i)
	s, vs := r.pcts(base, with, r.Config.Units)
	return s, vs, len(vs) > 0
}

func (r *Result) claimFig13() (claim, bool) {
	s, vs, ok := r.paradox("fig13", 1)
	agrees := all(vs[min(1, len(vs)):], func(v float64) bool { return v < 0 })
	return claim{Fig: "13", Paper: "adding the slow worker with equal shares makes jobs slower",
		Ours:    "decrease from adding it: " + s,
		Verdict: verdict(agrees, ok),
		Why: because(agrees, "equal shares wait for the slow worker's third of the units",
			r.slowDiffers("its third of the units"))}, ok
}

func (r *Result) claimFig14() (claim, bool) {
	s, vs, ok := r.paradox("fig14", 1)
	agrees := !slices.ContainsFunc(vs, func(v float64) bool { return v > 5 })
	return claim{Fig: "14", Paper: "shares by threads 2:2:1: still no improvement from the slow worker",
		Ours:    "decrease from adding it: " + s,
		Verdict: verdict(agrees, ok),
		Why: because(agrees, "a fifth of the units on a worker with about a third of a normal one's speed "+
			"still finishes last", "the slow worker finished its fifth of the units before the normal workers "+
			"finished theirs, so its CPU was a gain")}, ok
}

func (r *Result) claimFig15() (claim, bool) {
	s, vs, ok := r.paradox("fig15", 1)
	big := vs[max(0, len(vs)-3):]
	agrees := all(big, func(v float64) bool { return v > 0 })
	return claim{Fig: "15", Paper: "shares by threads 3:3:1: the slow worker now brings an improvement",
		Ours:    "decrease from adding it: " + s,
		Verdict: verdict(agrees, ok),
		Why: because(agrees, "a seventh of the units on the slow worker takes about as long as the normal "+
			"workers' shares, so its CPU is a net gain", r.slowDiffers("its seventh of the units"))}, ok
}

func (r *Result) claimFig16() (claim, bool) {
	var ours string
	var ok, measured bool
	for i := 1; i < 4; i++ {
		l, _ := r.lineRuns("fig16", i)
		s, vs, m := r.paradox("fig16", i)
		if !m {
			continue
		}
		measured = true
		worst := slices.Min(vs)
		ours += fmt.Sprintf("%s: worst %+.0f%% (%s). ", l.Label, worst, s)
		if l.Speculate {
			ok = worst >= -5
		}
	}
	return claim{Fig: "16 (ours)", Paper: "future work: a pipeline of tasks / shares by speed should remove the paradox",
		Ours:    ours + r.crossCheck16() + "Target: under dynamic + speculation, never slower (we allow 5% for noise).",
		Verdict: verdict(ok, measured),
		Why: because(ok, "dynamic sends units only to free slots, and a unit goes to the slow worker only if "+
			"it would finish it no later than a normal one after the units that one holds; speculation "+
			"re-runs its last stragglers on idle normal workers", r.slowerAt16())}, measured
}

// slowerAt16 explains where dynamic + speculation with the slow worker was
// slower than the allowance, with the two lines' min–max ranges: where the
// ranges overlap, the runs cannot tell the lines apart.
func (r *Result) slowerAt16() string {
	_, base := r.lineRuns("fig16", 0)
	_, with := r.lineRuns("fig16", 3)
	bs, ws := byUnits(base), byUnits(with)
	var parts []string
	overlap := true
	for _, d := range decreases("", base, with, r.Config.Units) {
		if d.Pct >= -5 {
			continue
		}
		b, w := summarize("", d.Units, bs[d.Units]), summarize("", d.Units, ws[d.Units])
		parts = append(parts, fmt.Sprintf("%d units: %.2f ms (%.2f–%.2f) with it vs %.2f (%.2f–%.2f) without",
			d.Units, w.Median, w.Min, w.Max, b.Median, b.Min, b.Max))
		overlap = overlap && w.Min <= b.Max
	}
	if len(parts) == 0 {
		return r.slowDiffers("the units it took")
	}
	s := "slower than the allowance at " + strings.Join(parts, "; ")
	if overlap {
		return s + ": the runs' ranges overlap, so at these counts (jobs of a few tens of ms, where the " +
			"quota's 20 ms bursts weigh most) this run cannot tell the lines apart"
	}
	return s + ": the ranges do not overlap, so this is a real loss at these counts"
}

// slowDiffers explains a slow-worker figure whose result is not the
// paper's: share is what the slow worker was given.
func (r *Result) slowDiffers(share string) string {
	if !r.capped() {
		return fmt.Sprintf("the paper's C3 added a machine; our slow worker's quota is taken from the same %d "+
			"cores the normal workers already saturate, so it cannot add capacity, and %s cost the normal "+
			"workers the CPU it used", r.Config.Cores, share)
	}
	return fmt.Sprintf("%s took the slow worker a different time than the quotas plan: fig 12 has its "+
		"measured speed, and the min–max columns below show how far the runs spread", share)
}

// crossCheck16 sets dynamic + speculation with the slow worker against the
// other 2-worker baseline (fig 13's, equal shares), measured at another
// time: a large gap between the two baselines is the machine's load.
func (r *Result) crossCheck16() string {
	_, eq := r.lineRuns("fig13", 0)
	_, dyn := r.lineRuns("fig16", 0)
	_, with := r.lineRuns("fig16", 3)
	s, vs := r.pcts(eq, with, r.Config.Units)
	if len(vs) == 0 {
		return ""
	}
	n := r.maxUnits()
	a, _ := medianAt(eq, n)
	b, _ := medianAt(dyn, n)
	return fmt.Sprintf("Cross-check against fig 13's 2-worker baseline (equal: %.2f ms vs dynamic: %.2f ms at %d "+
		"units, measured at different times, so the gap is likely load; the verdict uses the first): worst %+.0f%% (%s). ", a, b, n, slices.Min(vs), s)
}

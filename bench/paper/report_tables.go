package paper

import (
	"fmt"
	"slices"

	"github.com/braidhq/braid/internal/benchout"
)

// floorSection compares 2 workers × 2 threads at the largest number of
// units with the compute floor, and says where the time goes.
func (r *Result) floorSection(w func(string, ...any)) {
	f := r.Floor
	w("## Compute floor\n\n")
	w("Single-thread blur of the GIF in this process, median of %d runs: %.2f ms wall clock (under this "+
		"run's machine load), %.2f ms of thread CPU time. Floor = op time ÷ %d "+
		"cores = **%.2f ms/unit** (wall) or %.2f ms/unit (CPU). Target: 2 workers × 2 threads over tcpn within "+
		"5%% of the floor.\n\n", f.Samples, f.OpMS, f.OpCPUMS, f.Cores, f.FloorMS, f.CPUFloorMS)
	if f.ParallelMS > 0 {
		w("The same op with no braid at all, on %d goroutines of one process at once (as many as the workers' "+
			"threads): **%.2f ms/unit**, %+.0f%% from the floor. That gap is the machine's: the op is slower "+
			"when every core runs it (shared cache and memory bandwidth, threads time-sliced on %d cores). "+
			"What braid adds is its distance from this line.\n\n", f.ParallelThreads, f.ParallelMS,
			pct(f.ParallelMS, f.FloorMS), f.Cores)
	}
	n := r.maxUnits()
	w("| transport | units | avg ms/unit (median) | vs floor | vs op on all cores, no braid | worker CPU ms/unit | " +
		"server CPU ms/unit | cores busy | mean compute ms | mean queued ms | mean transit ms |\n")
	w("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, tr := range []string{"tcpn", "sctp"} {
		r.floorRow(w, tr, n)
	}
	w("\nCPU columns are means over the runs: the worker processes' CPU time (from /proc, 10 ms ticks) and the " +
		"bench process's, which hosts the server, divided by the units. \"Cores busy\" is their sum ÷ (avg ms/unit × " +
		"cores): below 100%% means cores stood idle. Worker CPU per unit above the op's CPU time is the op running " +
		"slower beside others plus the worker's own I/O. \"Transit\" is returned − sent − queued − compute per " +
		"unit: wire, framing and both ends' I/O paths, and for 4 threads on 2 cores, waiting for a core.\n\n")
}

func (r *Result) floorRow(w func(string, ...any), tr string, n int) {
	l := twoWorkers(tr)
	rs := r.Measured[l.key()]
	if len(rs) == 0 {
		return
	}
	var at []Record
	var wcpu, scpu float64
	for _, rec := range rs {
		if rec.Units == n {
			at = append(at, rec)
			wcpu += rec.WorkerCPUMS
			scpu += rec.ServerCPUMS
		}
	}
	if len(at) == 0 {
		return
	}
	wcpu, scpu = wcpu/float64(len(at)), scpu/float64(len(at))
	med, _ := medianAt(rs, n)
	mid := at[len(at)/2]
	par, cpuCols := "–", "– | – | –"
	if r.Floor.ParallelMS > 0 {
		par = fmt.Sprintf("%+.0f%%", pct(med, r.Floor.ParallelMS))
	}
	if wcpu > 0 {
		cpuCols = fmt.Sprintf("%.2f | %.2f | %.0f%%", wcpu, scpu, 100*(wcpu+scpu)/(med*float64(r.Floor.Cores)))
	}
	w("| %s | %d | %.2f | %+.0f%% | %s | %s | %.2f | %.2f | %.2f |\n", tr, n, med,
		pct(med, r.Floor.FloorMS), par, cpuCols, mid.ComputeMS, mid.QueuedMS, mid.TransitMS)
}

// pct is how much larger a is than b, in percent.
func pct(a, b float64) float64 { return 100 * (a/b - 1) }

// figureTables writes each figure's medians and spreads.
func (r *Result) figureTables(w func(string, ...any)) {
	w("## Figures\n\n")
	for _, fr := range r.Figures {
		w("### %s\n\n![%s](%s%s) ([csv](%s.csv), [json](%s.json))\n\n",
			fr.Title, fr.ID, fr.ID, benchout.PlotExt, fr.ID, fr.ID)
		if len(fr.Missing) > 0 {
			w("Not measured: %v\n\n", fr.Missing)
		}
		if fr.Decreases != nil {
			decreaseTable(w, fr.Decreases)
		} else {
			summaryTable(w, fr.Summary)
		}
	}
}

func summaryTable(w func(string, ...any), ss []Summary) {
	w("| line | units | median ms/unit | min–max | runs |\n|---|---|---|---|---|\n")
	for _, s := range ss {
		w("| %s | %d | %.2f | %.2f–%.2f | %d |\n", s.Line, s.Units, s.Median, s.Min, s.Max, s.N)
	}
	w("\n")
}

func decreaseTable(w func(string, ...any), ds []Decrease) {
	ds = slices.Clone(ds)
	w("| series | units | base median ms | median ms | decrease |\n|---|---|---|---|---|\n")
	for _, d := range ds {
		w("| %s | %d | %.2f | %.2f | %+.1f%% |\n", d.Line, d.Units, d.BaseMS, d.OtherMS, d.Pct)
	}
	w("\n")
}

package paper

import "slices"

// floorSection compares 2 workers × 2 threads at the largest number of
// units with the compute floor, and says where the time goes.
func (r *Result) floorSection(w func(string, ...any)) {
	f := r.Floor
	w("## Compute floor\n\n")
	w("Single-thread blur of the GIF in this process, median of %d runs: %.2f ms wall clock (under this "+
		"run's machine load), %.2f ms of thread CPU time (the op's cost on an idle core). Floor = op time ÷ %d "+
		"cores = **%.2f ms/unit** (wall) or %.2f ms/unit (CPU). Target: 2 workers × 2 threads over tcpn within "+
		"5%% of the floor.\n\n", f.Samples, f.OpMS, f.OpCPUMS, f.Cores, f.FloorMS, f.CPUFloorMS)
	n := r.maxUnits()
	w("| transport | units | avg ms/unit (median) | vs wall floor | vs CPU floor | mean compute ms | mean queued ms | mean transit ms | threads busy |\n")
	w("|---|---|---|---|---|---|---|---|---|\n")
	for _, tr := range []string{"tcpn", "sctp"} {
		r.floorRow(w, tr, n)
	}
	w("\n\"Transit\" is returned − sent − queued − compute per unit: wire, framing and both ends' I/O paths. " +
		"\"Threads busy\" is Σ compute ÷ (makespan × threads). Compute per unit above the single-thread time is " +
		"contention: 4 worker threads, the server and the machine's other load share the cores.\n\n")
}

func (r *Result) floorRow(w func(string, ...any), tr string, n int) {
	l := twoWorkers(tr)
	rs := r.Measured[l.key()]
	if len(rs) == 0 {
		return
	}
	var at []Record
	for _, rec := range rs {
		if rec.Units == n {
			at = append(at, rec)
		}
	}
	if len(at) == 0 {
		return
	}
	med, _ := medianAt(rs, n)
	mid := at[len(at)/2]
	busy := mid.ComputeMS * float64(n) / (mid.MakespanMS * 4)
	w("| %s | %d | %.2f | %+.0f%% | %+.0f%% | %.2f | %.2f | %.2f | %.0f%% |\n", tr, n, med,
		100*(med/r.Floor.FloorMS-1), 100*(med/r.Floor.CPUFloorMS-1), mid.ComputeMS, mid.QueuedMS, mid.TransitMS, 100*busy)
}

// figureTables writes each figure's medians and spreads.
func (r *Result) figureTables(w func(string, ...any)) {
	w("## Figures\n\n")
	for _, fr := range r.Figures {
		w("### %s\n\n![%s](%s.png) ([svg](%s.svg), [csv](%s.csv), [json](%s.json))\n\n",
			fr.Title, fr.ID, fr.ID, fr.ID, fr.ID, fr.ID)
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

package chaos

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Report is what a chaos run did and found.
type Report struct {
	Transport   string
	Seed        uint64
	Duration    time.Duration
	Workers     int
	Threads     int
	Outcomes    []outcome
	Jobs, Tiled int
	Units       int
	SentAgain   int      // unit sends beyond the first: requeued after a fault
	Violations  []string // broken invariants; empty for a clean run
	Dir         string   // logs and data, kept when the run failed
}

// OK reports whether every invariant held.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// Slowest returns the slowest detection and recovery over the outcomes.
func (r *Report) Slowest() (detect, recover time.Duration) {
	for _, o := range r.Outcomes {
		detect, recover = max(detect, o.detected), max(recover, o.recovered)
	}
	return detect, recover
}

// Print writes the report for people.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "chaos: transport %s, seed %d, %v of faults, %d workers × %d threads\n",
		r.Transport, r.Seed, r.Duration, r.Workers, r.Threads)
	counts := map[FaultKind]int{}
	for _, o := range r.Outcomes {
		counts[o.fault.Kind]++
	}
	fmt.Fprintf(w, "faults injected: %d (kill-worker %d, stop-worker %d, black-hole %d, term-worker %d, kill-server %d, term-server %d)\n",
		len(r.Outcomes), counts[KillWorker], counts[StopWorker], counts[BlackHole], counts[TermWorker], counts[KillServer], counts[TermServer])
	fmt.Fprintf(w, "jobs: %d checked (%d tiled), %d units; units sent again after a fault: %d\n", r.Jobs, r.Tiled, r.Units, r.SentAgain)
	r.printTimes(w)
	if r.OK() {
		fmt.Fprintln(w, "invariants: OK — every job done, one output per unit, outputs equal to a fault-free run, no thread leaked, no job waiting")
		return
	}
	fmt.Fprintf(w, "invariants: %d VIOLATED (logs and data kept in %s)\n", len(r.Violations), r.Dir)
	for _, v := range r.Violations {
		fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(v, "\n", "\n    "))
	}
}

// printTimes writes detection and recovery per kind of fault.
func (r *Report) printTimes(w io.Writer) {
	for _, k := range []FaultKind{KillWorker, StopWorker, BlackHole, TermWorker, KillServer, TermServer} {
		var det, rec []time.Duration
		missed, overtaken := 0, 0
		for _, o := range r.Outcomes {
			if o.fault.Kind != k {
				continue
			}
			if o.overtaken {
				overtaken++
			} else if o.detected > 0 {
				det = append(det, o.detected)
			} else if !k.onServer() {
				missed++
			}
			if o.recovered > 0 {
				rec = append(rec, o.recovered)
			}
		}
		if len(det)+len(rec)+missed+overtaken == 0 {
			continue
		}
		line := fmt.Sprintf("%-11s", k)
		if !k.onServer() {
			line += fmt.Sprintf("  detected %d: slowest %v, median %v", len(det), slowest(det), median(det))
			if missed > 0 {
				line += fmt.Sprintf(" (%d over before noticed)", missed)
			}
			if overtaken > 0 {
				line += fmt.Sprintf(" (%d overtaken by a server fault)", overtaken)
			}
			line += ";"
		}
		line += fmt.Sprintf("  recovered %d: slowest %v, median %v", len(rec), slowest(rec), median(rec))
		fmt.Fprintln(w, line)
	}
}

func slowest(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds).Round(time.Millisecond)
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

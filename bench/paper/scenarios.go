package paper

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/braidhq/braid/internal/transports"
)

// workerSpec is one worker process of a line.
type workerSpec struct {
	Threads   int
	Transport string
	Slow      bool // in a cgroup with the slow worker's CPU quota
	// Machine puts a normal worker in a cgroup of its own with a normal
	// machine's CPU quota (Config.MachineCPUs), so that it is a machine of
	// its own, as in the paper, whose CPU no other worker can take.
	Machine bool
}

// line is one series: a worker set, a policy, and the label on the plot.
type line struct {
	Label     string
	Workers   []workerSpec
	Policy    string
	Speculate bool
}

// setup identifies the worker processes of a line; lines with the same
// setup share the processes.
func (l line) setup() string {
	parts := make([]string, len(l.Workers))
	for i, w := range l.Workers {
		parts[i] = fmt.Sprintf("%s×%d", w.Transport, w.Threads)
		if w.Slow {
			parts[i] += "(slow)"
		}
		if w.Machine {
			parts[i] += "(machine)"
		}
	}
	return strings.Join(parts, "+")
}

// key identifies what a line measures.
func (l line) key() string {
	return fmt.Sprintf("%s/%s/spec=%t", l.setup(), l.Policy, l.Speculate)
}

func (l line) slow() bool {
	return slices.ContainsFunc(l.Workers, func(w workerSpec) bool { return w.Slow })
}

// threads is the per-worker thread counts, e.g. "2:2:1".
func (l line) threads() string {
	parts := make([]string, len(l.Workers))
	for i, w := range l.Workers {
		parts[i] = strconv.Itoa(w.Threads)
	}
	return strings.Join(parts, ":")
}

// pair is one series of a derived figure: the percentage decrease of
// Other's average time per unit relative to Base's.
type pair struct {
	Label       string
	Base, Other line
}

// figure is one of the paper's figures: measured lines, or pairs for a
// percentage-decrease figure.
type figure struct {
	ID, Title string
	Lines     []line
	Pairs     []pair
	Peer      bool // draws the Dask line too
}

func (f figure) slow() bool {
	for _, l := range f.allLines() {
		if l.slow() {
			return true
		}
	}
	return false
}

// allLines is every line the figure needs measured.
func (f figure) allLines() []line {
	out := slices.Clone(f.Lines)
	for _, p := range f.Pairs {
		out = append(out, p.Base, p.Other)
	}
	return out
}

// sctpName is the transport standing for the paper's SCTP: sctp when this
// binary has it, else the default transport.
func sctpName() string {
	if slices.Contains(transports.Names, "sctp") {
		return "sctp"
	}
	return transports.Default
}

// machines is n normal workers, each a machine of its own.
func machines(n, threads int, tr string) []workerSpec {
	ws := workers(n, threads, tr)
	for i := range ws {
		ws[i].Machine = true
	}
	return ws
}

func workers(n, threads int, tr string) []workerSpec {
	out := make([]workerSpec, n)
	for i := range out {
		out[i] = workerSpec{Threads: threads, Transport: tr}
	}
	return out
}

func mk(label string, ws []workerSpec, policy string, spec bool) line {
	return line{Label: label, Workers: ws, Policy: policy, Speculate: spec}
}

// oneWorker is 1 worker with n threads (= streams) over tr.
func oneWorker(tr string, n int) line {
	s := "streams"
	if n == 1 {
		s = "stream"
	}
	return mk(fmt.Sprintf("1 worker, %d %s %s", n, tr, s), workers(1, n, tr), "equal", false)
}

func twoWorkers(tr string) line {
	return mk(fmt.Sprintf("2 workers × 2 %s streams", tr), workers(2, 2, tr), "equal", false)
}

// withSlow is 2 normal machines with t threads plus the slow one with st.
func withSlow(tr string, t, st int, policy string, spec bool) line {
	ws := append(machines(2, t, tr), workerSpec{Threads: st, Transport: tr, Slow: true})
	label := fmt.Sprintf("2 + slow, %d:%d:%d threads, %s", t, t, st, policy)
	if spec {
		label += " + speculation"
	}
	return mk(label, ws, policy, spec)
}

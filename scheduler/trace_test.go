package scheduler_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.trace with the current output")

// TestTraces replays testdata/*.trace. A trace is a list of commands
// ("> cmd args"), each followed by what the core answered; lines starting
// with '#' are comments. With -rewrite the answers are regenerated. Each
// trace is replayed on the core and on one with the reference finder
// (scheduler.NewNaive), which must answer the same.
//
// Commands (the clock starts at 0 and only tick/advance move it):
//
//	worker-up W streams=N [threads=N] [await-lease] [hold=BYTES] ops=a,b
//	lease W streams=N
//	hold W bytes=N
//	worker-down W
//	job J policy=P units=N op=OP [speculate] [deps=2:0,1;3:2] [unit-ops=1:sobel;2:blur] [done=0,3]
//	    [size=BYTES] [sizes=0:100;3:2000]   input sizes (every unit's, then some units')
//	    [repeat]   a repeat job (JobAdded.Repeat) of units, op, size and done (as spans)
//	cancel J
//	finish J UNIT W STREAM [compute=DUR] [queued=DUR] [attempt=N] [failed]
//	return J UNIT W STREAM [attempt=N]
//	feedback W queue=N rate=F
//	tick DUR      advance the clock by DUR, then Tick
//	advance DUR   advance the clock by DUR
//	progress J
//	demand W
//	workers
//	config [window=N] [max-window=N] [speculate-after=F] [byte-horizon=DUR]   a fresh core
//
// workers lists bytes= and budget= for a worker with a byte budget or bytes
// in flight.
func TestTraces(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.trace")
	if len(files) == 0 {
		t.Fatal("no traces")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".trace"), func(t *testing.T) {
			old, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, string(old), scheduler.New)
			if ref := replay(t, string(old), scheduler.NewNaive); ref != got {
				t.Errorf("%s: the reference finder answers differently:\n%s", f, ref)
			}
			if *rewrite {
				if err := os.WriteFile(f, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != string(old) {
				t.Errorf("%s differs (run with -rewrite to accept); got:\n%s", f, got)
			}
		})
	}
}

type tracer struct {
	t       *testing.T
	core    *scheduler.Core
	newCore func(scheduler.Config) *scheduler.Core
	now     time.Time
}

func replay(t *testing.T, src string, newCore func(scheduler.Config) *scheduler.Core) string {
	tr := &tracer{t: t, core: newCore(scheduler.Config{}), newCore: newCore, now: time.Unix(0, 0).UTC()}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(src, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, ">"):
			b.WriteString(line + "\n")
			for _, o := range tr.run(strings.Fields(strings.TrimPrefix(line, ">"))) {
				b.WriteString(o + "\n")
			}
		case line == "" || strings.HasPrefix(line, "#"):
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func (tr *tracer) run(f []string) []string {
	if len(f) == 0 {
		return []string{"error: empty command"}
	}
	cmd, args, kv := f[0], positional(f[1:]), keyvals(f[1:])
	switch cmd {
	case "tick", "advance":
		tr.now = tr.now.Add(tr.dur(args[0]))
		if cmd == "advance" {
			return []string{"now " + tr.now.Sub(time.Unix(0, 0)).String()}
		}
		return format(tr.core.Tick(tr.now))
	case "progress":
		return []string{tr.progress(args[0])}
	case "demand":
		return []string{fmt.Sprintf("demand %s: %d", args[0], tr.core.Demand(args[0]))}
	case "workers":
		return tr.workers()
	case "config":
		tr.core = tr.newCore(scheduler.Config{Window: tr.atoi(kv["window"]),
			MaxWindow: tr.atoi(kv["max-window"]), SpeculateAfter: tr.float(kv["speculate-after"]),
			ByteHorizon: tr.dur(kv["byte-horizon"])})
		return []string{"ok"}
	}
	ev, err := tr.event(cmd, args, kv)
	if err != nil {
		return []string{"bad command: " + err.Error()}
	}
	out, err := tr.core.Step(tr.now, ev)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return format(out)
}

func (tr *tracer) event(cmd string, args []string, kv map[string]string) (scheduler.Event, error) {
	switch cmd {
	case "worker-up":
		_, await := kv["await-lease"]
		return scheduler.WorkerUp{Worker: args[0], Streams: tr.atoi(kv["streams"]),
			Threads: tr.atoi(kv["threads"]), Ops: split(kv["ops"], ","), AwaitLease: await, HoldBytes: int64(tr.atoi(kv["hold"]))}, nil
	case "lease":
		return scheduler.WorkerLease{Worker: args[0], Streams: tr.atoi(kv["streams"])}, nil
	case "hold":
		return scheduler.WorkerHold{Worker: args[0], HoldBytes: int64(tr.atoi(kv["bytes"]))}, nil
	case "return":
		return scheduler.UnitReturned{Job: args[0], Unit: tr.atoi(args[1]), Worker: args[2],
			Stream: tr.atoi(args[3]), Attempt: tr.atoi(kv["attempt"])}, nil
	case "worker-down":
		return scheduler.WorkerDown{Worker: args[0]}, nil
	case "job":
		return tr.job(args[0], kv), nil
	case "cancel":
		return scheduler.JobCancelled{Job: args[0]}, nil
	case "finish":
		_, failed := kv["failed"]
		return scheduler.UnitFinished{Job: args[0], Unit: tr.atoi(args[1]), Worker: args[2],
			Stream: tr.atoi(args[3]), Compute: tr.dur(kv["compute"]), Queued: tr.dur(kv["queued"]), Failed: failed, Attempt: tr.atoi(kv["attempt"])}, nil
	case "feedback":
		return scheduler.Feedback{Worker: args[0], QueueDepth: tr.atoi(kv["queue"]), ServiceRate: tr.float(kv["rate"]),
			Transit: tr.dur(kv["transit"])}, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}

func (tr *tracer) job(name string, kv map[string]string) scheduler.JobAdded {
	_, spec := kv["speculate"]
	if _, ok := kv["repeat"]; ok {
		r := scheduler.Repeat{Count: tr.atoi(kv["units"]), Op: kv["op"], Size: int64(tr.atoi(kv["size"]))}
		for _, d := range split(kv["done"], ",") {
			if i := tr.atoi(d); len(r.Done) > 0 && r.Done[len(r.Done)-1].To == i {
				r.Done[len(r.Done)-1].To++
			} else {
				r.Done = append(r.Done, scheduler.Span{From: i, To: i + 1})
			}
		}
		return scheduler.JobAdded{Job: name, Policy: kv["policy"], Speculate: spec, Repeat: r}
	}
	units := make([]scheduler.Unit, tr.atoi(kv["units"]))
	for i := range units {
		units[i] = scheduler.Unit{Index: i, Op: kv["op"], Size: int64(tr.atoi(kv["size"]))}
	}
	for _, d := range split(kv["sizes"], ";") {
		u, size, _ := strings.Cut(d, ":")
		units[tr.atoi(u)].Size = int64(tr.atoi(size))
	}
	for _, d := range split(kv["deps"], ";") {
		u, deps, _ := strings.Cut(d, ":")
		for _, dep := range split(deps, ",") {
			units[tr.atoi(u)].Deps = append(units[tr.atoi(u)].Deps, tr.atoi(dep))
		}
	}
	for _, d := range split(kv["unit-ops"], ";") {
		u, op, _ := strings.Cut(d, ":")
		units[tr.atoi(u)].Op = op
	}
	for _, d := range split(kv["done"], ",") {
		units[tr.atoi(d)].Done = true
	}
	return scheduler.JobAdded{Job: name, Policy: kv["policy"], Speculate: spec, Units: units}
}

func format(out scheduler.Output) []string {
	var lines []string
	for _, a := range out.Assign {
		spec := ""
		if a.Speculative {
			spec = " speculative"
		}
		lines = append(lines, fmt.Sprintf("assign %s/%d -> %s:%d attempt=%d%s", a.Job, a.Unit, a.Worker, a.Stream, a.Attempt, spec))
	}
	for _, f := range out.Accepted {
		lines = append(lines, "accepted "+result(f))
	}
	for _, f := range out.Dropped {
		lines = append(lines, "dropped "+result(f))
	}
	for _, j := range out.JobsDone {
		lines = append(lines, "done "+j)
	}
	if len(lines) == 0 {
		lines = []string{"ok"}
	}
	return lines
}

func result(f scheduler.UnitFinished) string {
	s := fmt.Sprintf("%s/%d from %s:%d", f.Job, f.Unit, f.Worker, f.Stream)
	if f.Failed {
		s += " failed"
	}
	return s
}

func (tr *tracer) progress(job string) string {
	p, ok := tr.core.Progress(job)
	if !ok {
		return "progress " + job + ": unknown"
	}
	s := fmt.Sprintf("progress %s: total=%d done=%d running=%d failed=%d pending=%d",
		job, p.Total, p.Done, p.Running, p.Failed, p.Pending)
	if p.Waiting != "" {
		s += fmt.Sprintf(" waiting=%q", p.Waiting)
	}
	return s
}

func (tr *tracer) workers() []string {
	var lines []string
	for _, w := range tr.core.Workers() {
		state := "down"
		if w.Up {
			state = "up"
		}
		lease := ""
		if w.Lease != len(w.InFlight) {
			lease = fmt.Sprintf(" lease=%d", w.Lease)
		}
		bytes := ""
		if w.Bytes != 0 || w.Budget != 0 {
			bytes = fmt.Sprintf(" bytes=%d budget=%d", w.Bytes, w.Budget)
		}
		lines = append(lines, fmt.Sprintf("%s %s window=%d inflight=%v%s unit=%v%s", w.Name, state, w.Window, w.InFlight, lease, w.UnitTime, bytes))
	}
	return lines
}

func positional(f []string) []string {
	var out []string
	for _, s := range f {
		if !strings.Contains(s, "=") && !isFlag(s) {
			out = append(out, s)
		}
	}
	return append(out, "", "", "", "") // missing arguments read as empty
}

func isFlag(s string) bool {
	return s == "speculate" || s == "failed" || s == "await-lease" || s == "repeat"
}

func keyvals(f []string) map[string]string {
	kv := map[string]string{}
	for _, s := range f {
		if k, v, ok := strings.Cut(s, "="); ok {
			kv[k] = v
		} else if isFlag(s) {
			kv[s] = ""
		}
	}
	return kv
}

func split(s, sep string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, sep)
}

func (tr *tracer) atoi(s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		tr.t.Fatalf("bad number %q", s)
	}
	return n
}

func (tr *tracer) dur(s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		tr.t.Fatalf("bad duration %q", s)
	}
	return d
}

func (tr *tracer) float(s string) float64 {
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		tr.t.Fatalf("bad number %q", s)
	}
	return f
}

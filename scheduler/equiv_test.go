package scheduler_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/scheduler/schedsim"
)

// TestIndexedMatchesNaiveInSim holds the core's indexed placement to the
// reference that scans every worker (naive_test.go): the random clusters
// of TestRandomClusters, and larger ones, give the same outputs, step by
// step, with either.
func TestIndexedMatchesNaiveInSim(t *testing.T) {
	ops := []string{"blur", "sobel", "resize"}
	defer scheduler.SetLazySlack(scheduler.SetLazySlack(0))
	for seed := range uint64(200) {
		scheduler.SetLazySlack([]int{0, 1024, 1024}[seed%3]) // rankings dropped and built again often, or not
		r := rand.New(rand.NewPCG(seed, 11))
		cfg := randomCluster(r, ops)
		if seed%2 == 1 { // more workers, so that rankings have depth
			cfg = widen(r, cfg, 10+r.IntN(40))
		}
		cfg.Seed = seed
		if a, b := observe(t, cfg, scheduler.New), observe(t, cfg, scheduler.NewNaive); !slices.Equal(a, b) {
			k := firstDiff(a, b)
			t.Fatalf("seed %d: step %d: indexed\n%s\nnaive\n%s\nconfig %+v", seed, k, at(a, k), at(b, k), cfg)
		}
	}
}

// TestRepeatMatchesListed: a repeat job and the same units listed one by
// one are placed alike (the random clusters of TestRandomClusters).
func TestRepeatMatchesListed(t *testing.T) {
	ops := []string{"blur", "sobel", "resize"}
	for seed := range uint64(100) {
		cfg := randomCluster(rand.New(rand.NewPCG(seed, 13)), ops)
		cfg.Seed = seed
		for k := range cfg.Jobs {
			cfg.Jobs[k].Listed = false
		}
		repeat := observe(t, cfg, scheduler.New)
		for k := range cfg.Jobs {
			cfg.Jobs[k].Listed = true
		}
		if listed := observe(t, cfg, scheduler.New); !slices.Equal(repeat, listed) {
			k := firstDiff(repeat, listed)
			t.Fatalf("seed %d: step %d: repeat\n%s\nlisted\n%s", seed, k, at(repeat, k), at(listed, k))
		}
	}
}

// TestBadRepeat: a job with both listed units and a repeat count, or a
// repeat job with done spans out of order, is refused and changes
// nothing.
func TestBadRepeat(t *testing.T) {
	c := scheduler.New(scheduler.Config{})
	for _, ev := range []scheduler.JobAdded{
		{Job: "j", Policy: "dynamic", Units: []scheduler.Unit{{Index: 0, Op: "op"}}, Repeat: scheduler.Repeat{Count: 1, Op: "op"}},
		{Job: "j", Policy: "dynamic", Repeat: scheduler.Repeat{Count: 5, Op: "op", Done: []scheduler.Span{{From: 2, To: 3}, {From: 1, To: 2}}}},
		{Job: "j", Policy: "dynamic", Repeat: scheduler.Repeat{Count: 5, Op: "op", Done: []scheduler.Span{{From: 2, To: 2}}}},
		{Job: "j", Policy: "dynamic", Repeat: scheduler.Repeat{Count: -1, Op: "op"}},
		{Job: "j", Policy: "dynamic", Repeat: scheduler.Repeat{Count: 3}},
	} {
		if _, err := c.Step(time.Unix(0, 0), ev); !errors.Is(err, scheduler.ErrBadUnit) {
			t.Errorf("%+v: error %v, want ErrBadUnit", ev, err)
		}
	}
	if len(c.Jobs()) != 0 {
		t.Errorf("jobs %v kept", c.Jobs())
	}
}

// widen gives cfg n workers like its first ones.
func widen(r *rand.Rand, cfg schedsim.Config, n int) schedsim.Config {
	base := cfg.Workers
	for i := len(base); i < n; i++ {
		w := base[r.IntN(len(base))]
		w.Name = fmt.Sprintf("w%d", i)
		w.UnitTime = time.Duration(1+r.IntN(20)) * 100 * time.Millisecond
		cfg.Workers = append(cfg.Workers, w)
	}
	for k := range cfg.Jobs {
		cfg.Jobs[k].Units *= 1 + r.IntN(5)
	}
	return cfg
}

func observe(t *testing.T, cfg schedsim.Config, newCore func(scheduler.Config) *scheduler.Core) []string {
	var out []string
	cfg.NewCore = newCore
	cfg.Observe = func(o scheduler.Output) { out = append(out, strings.Join(format(o), "\n")) }
	if _, err := schedsim.Run(cfg); err != nil {
		t.Fatalf("seed %d: %v", cfg.Seed, err)
	}
	return out
}

func firstDiff(a, b []string) int {
	for k := range min(len(a), len(b)) {
		if a[k] != b[k] {
			return k
		}
	}
	return min(len(a), len(b))
}

func at(s []string, k int) string {
	if k < len(s) {
		return s[k]
	}
	return "(end)"
}

// TestIndexedMatchesNaiveEvents drives an indexed core and a reference
// core with the same random events, every kind the core takes (leases,
// holds, returns, cancels, dependencies, held units, repeat jobs, stale
// and duplicate results), and checks after each that their outputs,
// progress, demand and worker snapshots agree and that the indexed core's
// indexes match a scan of its workers.
func TestIndexedMatchesNaiveEvents(t *testing.T) {
	defer scheduler.SetLazySlack(scheduler.SetLazySlack(0))
	for seed := range uint64(150) {
		scheduler.SetLazySlack([]int{0, 4, 1024}[seed%3])
		f := newFuzz(seed)
		for step := range 400 {
			desc, ev := f.event()
			if f.bad != "" {
				t.Fatalf("seed %d step %d (%s): %s", seed, step, desc, f.bad)
			}
			if err := f.step(ev); err != "" {
				t.Fatalf("seed %d step %d (%s): %s", seed, step, desc, err)
			}
		}
	}
}

type fuzz struct {
	r       *rand.Rand
	a, b    *scheduler.Core
	now     time.Time
	workers []string
	up      map[string]int // streams of the up workers
	jobs    []string
	sizes   map[string]int // units of each job
	flight  []scheduler.Assignment
	done    []scheduler.Assignment // finished, for stale results
	n       int
	bad     string // a difference found while making an event
}

func newFuzz(seed uint64) *fuzz {
	r := rand.New(rand.NewPCG(seed, 5))
	cfg := scheduler.Config{Window: r.IntN(3), MaxWindow: r.IntN(6), SpeculateAfter: []float64{0, 0.5, 2}[r.IntN(3)],
		ByteHorizon: []time.Duration{0, -1, 20 * time.Millisecond}[r.IntN(3)]}
	f := &fuzz{r: r, a: scheduler.New(cfg), b: scheduler.NewNaive(cfg), now: time.Unix(0, 0), up: map[string]int{}, sizes: map[string]int{}}
	for i := range 3 + r.IntN(12) {
		f.workers = append(f.workers, fmt.Sprintf("w%02d", i))
	}
	return f
}

var fuzzOps = []string{"a", "b", "c", "a+b"}

func (f *fuzz) pick(xs []string) string { return xs[f.r.IntN(len(xs))] }

func (f *fuzz) upWorker() string {
	var ws []string
	for _, w := range f.workers {
		if _, ok := f.up[w]; ok {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return f.pick(f.workers)
	}
	return f.pick(ws)
}

func (f *fuzz) event() (string, scheduler.Event) {
	r := f.r
	switch k := r.IntN(100); {
	case k < 12:
		w := f.pick(f.workers)
		var ops []string
		for _, op := range []string{"a", "b", "c"} {
			if r.IntN(2) == 0 {
				ops = append(ops, op)
			}
		}
		if len(ops) == 0 {
			ops = []string{"a"}
		}
		return "up", scheduler.WorkerUp{Worker: w, Streams: 1 + r.IntN(3), Threads: r.IntN(5), Ops: ops,
			AwaitLease: r.IntN(4) == 0, HoldBytes: []int64{0, 0, 1500, 8000}[r.IntN(4)]}
	case k < 16:
		return "down", scheduler.WorkerDown{Worker: f.upWorker()}
	case k < 20:
		w := f.upWorker()
		return "lease", scheduler.WorkerLease{Worker: w, Streams: r.IntN(f.up[w] + 1)}
	case k < 22:
		return "hold", scheduler.WorkerHold{Worker: f.upWorker(), HoldBytes: []int64{0, 900, 5000}[r.IntN(3)]}
	case k < 28:
		return "feedback", scheduler.Feedback{Worker: f.upWorker(), QueueDepth: r.IntN(6),
			ServiceRate: []float64{0, 0, 5, 20, 100}[r.IntN(5)], Transit: time.Duration(r.IntN(30)) * time.Millisecond}
	case k < 36:
		return "job", f.job()
	case k < 39 && len(f.jobs) > 0:
		j := f.pick(f.jobs)
		var units []int
		var sizes []int64
		for range 1 + r.IntN(5) {
			units = append(units, r.IntN(f.sizes[j]))
			sizes = append(sizes, []int64{0, 300, 3000}[r.IntN(3)])
		}
		if r.IntN(2) == 0 {
			sizes = nil
		}
		return "release", scheduler.UnitsReleased{Job: j, Units: units, Sizes: sizes}
	case k < 41 && len(f.jobs) > 0:
		return "cancel", scheduler.JobCancelled{Job: f.pick(f.jobs)}
	case k < 70 && len(f.flight) > 0:
		i := r.IntN(min(len(f.flight), 4)) // mostly the oldest
		a := f.flight[i]
		f.flight = slices.Delete(f.flight, i, i+1)
		f.done = append(f.done, a)
		attempt := a.Attempt
		if r.IntN(4) == 0 {
			attempt = 0
		}
		return "finish", scheduler.UnitFinished{Job: a.Job, Unit: a.Unit, Worker: a.Worker, Stream: a.Stream, Attempt: attempt,
			Failed: r.IntN(25) == 0, Compute: []time.Duration{0, time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond}[r.IntN(4)],
			Queued: time.Duration(r.IntN(3)) * time.Millisecond}
	case k < 73 && len(f.done) > 0:
		a := f.pick2(f.done)
		return "stale", scheduler.UnitFinished{Job: a.Job, Unit: a.Unit, Worker: a.Worker, Stream: a.Stream, Attempt: a.Attempt, Compute: time.Millisecond}
	case k < 76 && len(f.flight) > 0:
		i := r.IntN(len(f.flight))
		a := f.flight[i]
		f.flight = slices.Delete(f.flight, i, i+1)
		return "return", scheduler.UnitReturned{Job: a.Job, Unit: a.Unit, Worker: a.Worker, Stream: a.Stream, Attempt: a.Attempt}
	case k < 78 && len(f.jobs) > 0:
		j := f.pick(f.jobs)
		i := r.IntN(f.sizes[j])
		size := int64(100 * (1 + r.IntN(30)))
		f.a.SetSize(j, i, size)
		f.b.SetSize(j, i, size)
		return "setsize", nil
	case k < 80 && len(f.jobs) > 0:
		j := f.pick(f.jobs)
		if f.a.Forget(j) != f.b.Forget(j) {
			f.bad = "Forget differs"
		}
		return "forget", nil
	}
	f.now = f.now.Add(time.Duration(r.IntN(8)) * time.Millisecond)
	return "tick", nil
}

func (f *fuzz) pick2(as []scheduler.Assignment) scheduler.Assignment { return as[f.r.IntN(len(as))] }

func (f *fuzz) job() scheduler.JobAdded {
	r := f.r
	f.n++
	name := fmt.Sprintf("j%d", f.n)
	ev := scheduler.JobAdded{Job: name, Policy: scheduler.PolicyNames[r.IntN(len(scheduler.PolicyNames))], Speculate: r.IntN(2) == 0}
	if r.IntN(3) == 0 {
		n := 1 + r.IntN(60)
		ev.Repeat = scheduler.Repeat{Count: n, Op: f.pick(fuzzOps), Size: []int64{0, 200, 2000}[r.IntN(3)]}
		for from := r.IntN(n + 1); from < n && r.IntN(3) > 0; {
			to := from + 1 + r.IntN(n-from)
			ev.Repeat.Done = append(ev.Repeat.Done, scheduler.Span{From: from, To: to})
			from = to + 1 + r.IntN(5)
		}
	} else {
		n := 1 + r.IntN(30)
		op := f.pick(fuzzOps)
		for i := range n {
			u := scheduler.Unit{Index: i, Op: op, Size: []int64{0, 200, 2000}[r.IntN(3)], Done: r.IntN(10) == 0, Held: r.IntN(10) == 0}
			if r.IntN(4) == 0 {
				u.Op = f.pick(fuzzOps)
			}
			for d := range i {
				if r.IntN(8) == 0 {
					u.Deps = append(u.Deps, d)
				}
			}
			ev.Units = append(ev.Units, u)
		}
		r.Shuffle(len(ev.Units), func(a, b int) { ev.Units[a], ev.Units[b] = ev.Units[b], ev.Units[a] })
	}
	f.jobs = append(f.jobs, name)
	f.sizes[name] = max(len(ev.Units), ev.Repeat.Count)
	return ev
}

// step gives ev (nil: a Tick) to both cores and compares them; it returns
// a description of the first difference, "" if none.
func (f *fuzz) step(ev scheduler.Event) string {
	var oa, ob scheduler.Output
	var ea, eb error
	switch ev := ev.(type) {
	case nil:
		oa, ob = f.a.Tick(f.now), f.b.Tick(f.now)
	default:
		f.now = f.now.Add(time.Duration(f.r.IntN(2)) * time.Millisecond)
		oa, ea = f.a.Step(f.now, ev)
		ob, eb = f.b.Step(f.now, ev)
		if fmt.Sprint(ea) != fmt.Sprint(eb) {
			return fmt.Sprintf("errors %v and %v", ea, eb)
		}
		if ea == nil {
			f.track(ev)
		}
	}
	if x, y := strings.Join(format(oa), "\n"), strings.Join(format(ob), "\n"); x != y {
		return fmt.Sprintf("indexed:\n%s\nnaive:\n%s", x, y)
	}
	f.flight = append(f.flight, oa.Assign...)
	return f.compare()
}

// track follows the workers' membership as the events change it.
func (f *fuzz) track(ev scheduler.Event) {
	switch ev := ev.(type) {
	case scheduler.WorkerUp:
		f.up[ev.Worker] = ev.Streams
		f.flight = slices.DeleteFunc(f.flight, func(a scheduler.Assignment) bool { return a.Worker == ev.Worker && f.r.IntN(2) == 0 })
	case scheduler.WorkerDown:
		delete(f.up, ev.Worker)
	}
}

func (f *fuzz) compare() string {
	if why := f.a.CheckIndexes(); why != "" {
		return "indexes: " + why
	}
	if wa, wb := f.a.Workers(), f.b.Workers(); !reflect.DeepEqual(wa, wb) {
		return fmt.Sprintf("workers %+v and %+v", wa, wb)
	}
	for _, w := range f.workers {
		if da, db := f.a.Demand(w), f.b.Demand(w); da != db {
			return fmt.Sprintf("demand of %s: %d and %d", w, da, db)
		}
	}
	for _, j := range f.jobs {
		pa, oka := f.a.Progress(j)
		pb, okb := f.b.Progress(j)
		if pa != pb || oka != okb {
			return fmt.Sprintf("progress of %s: %+v and %+v", j, pa, pb)
		}
	}
	if f.a.Speculating() != f.b.Speculating() {
		return "speculating"
	}
	return ""
}

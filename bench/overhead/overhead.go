// Package overhead is the engine behind `braid bench overhead`: how many
// units per second of an operation that does nothing (the built-in noop,
// or a user operation's module) the whole system runs — client, server,
// data plane and workers — and what a submit costs. It runs other
// operations too, on an input given (Op.Input), to compare one with
// another through the whole system, by rate and by CPU time per unit.
//
// Each transport gets a cluster of its own: in this process (package
// cluster), or with Config.Net as processes across the emulated WAN
// (package netcluster). The cluster runs Config.Runs jobs of Config.Units
// units each, one after another; a Result is one job.
package overhead

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/bench/netcluster"
	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/store"
)

// Result is one run of the overhead benchmark.
type Result struct {
	Transport   string  `json:"transport"`
	Op          string  `json:"op"`
	Workers     int     `json:"workers"`
	Threads     int     `json:"threads"`
	Units       int     `json:"units"`
	Size        int     `json:"size"`
	Inputs      bool    `json:"inputs,omitempty"` // one object per unit (--inputs)
	Store       string  `json:"store,omitempty"`  // Config.Store: "" for the data directory
	SubmitMS    float64 `json:"submit_ms"`
	HeapMiB     float64 `json:"heap_mib,omitempty"` // Go heap in use after the submit, in-process runs
	MakespanMS  float64 `json:"makespan_ms"`
	UnitsPerSec float64 `json:"units_per_sec"`
	// CPUPerUnitMS is the CPU time (user and system) this process spent
	// per unit from the submit to the job's end: client, server, workers
	// and operation together; in-process runs only. On a machine shared
	// with other work it varies far less than the rate does.
	CPUPerUnitMS float64 `json:"cpu_ms_per_unit,omitempty"`
	// With --cut: the path and delay, whether the job ended before the
	// cut, and the server's count of units taken back from workers whose
	// association ended, and of associations it found silent, meanwhile.
	Cut       string `json:"cut,omitempty"`
	CutMissed bool   `json:"cut_missed,omitempty"`
	Requeued  int    `json:"requeued,omitempty"`
	AssocLost int    `json:"assoc_lost,omitempty"`
}

// Config describes a run of the benchmark. Zero values mean the defaults
// given.
type Config struct {
	// Transports are measured one after another (default: braid's
	// default); NAME+tls forces data-plane encryption (transports.SplitTLS).
	Transports []string
	// Options tune the transports.
	Options transports.Options
	// Op is the operation the units run (default: the built-in noop).
	Op Op
	// Units per job (default 20,000) and Runs jobs per transport
	// (default 3); Size bytes of input per unit (0: empty inputs; with
	// Op.Input, its length).
	Units, Runs, Size int
	// Workers and their Threads size the cluster (default 2 × 2).
	Workers, Threads int
	// Window is the server's units in flight per stream to start with
	// (0: the scheduler's).
	Window int
	// Net, if set, runs each cluster across its emulated WAN instead of in
	// this process; Cut, if also set, black-holes a path into each job.
	Net *netcluster.Cluster
	Cut *netcluster.Cut
	// Log gets progress lines (default: discarded).
	Log io.Writer
	// Store names the server's object store in the results ("": its data
	// directory). OpenStore, if set, gives each cluster's server a store
	// opener (cluster.Config.OpenStore), called once per transport so
	// that no run finds another's objects; in-process clusters only.
	Store     string
	OpenStore func() (func(serverID string, cfg store.Config) (store.Store, error), error)
}

func (c Config) withDefaults() Config {
	if len(c.Transports) == 0 {
		c.Transports = []string{transports.Default}
	}
	if c.Op.Name == "" {
		c.Op.Name = "noop"
	}
	if c.Op.Input != nil {
		c.Size = len(c.Op.Input)
	}
	setDefault(&c.Units, 20000)
	setDefault(&c.Runs, 3)
	setDefault(&c.Workers, 2)
	setDefault(&c.Threads, 2)
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

func setDefault(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

// Run runs cfg.Runs jobs on each transport's cluster, in the order given.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Op.Input != nil && cfg.Op.Inputs {
		return nil, errors.New("overhead: Op.Input gives every unit one object, Op.Inputs each its own: not both")
	}
	var all []Result
	for _, tname := range cfg.Transports {
		rs, err := runs(ctx, cfg, tname)
		if err != nil {
			return all, fmt.Errorf("%s: %w", tname, err)
		}
		all = append(all, rs...)
	}
	return all, nil
}

// Op is the operation the benchmark runs: a built-in (noop unless
// named), or a user operation's module, registered under Name.
type Op struct {
	Name, ABI string
	Module    []byte            // nil: Name is a built-in operation
	Params    map[string]string // the job's; a Module declares each as a string
	Input     []byte            // every unit's input (nil: Config.Size random bytes)
	Inputs    bool              // one random object per unit; not with Input
}

// register makes op a user operation on cl's server, if it is one.
func (op Op) register(ctx context.Context, cl *client.Client) error {
	if op.Module == nil {
		return nil
	}
	spec := api.OperationSpec{Name: op.Name, ABI: op.ABI}
	for _, k := range slices.Sorted(maps.Keys(op.Params)) {
		spec.Params = append(spec.Params, api.Parameter{Name: k, Type: "string"})
	}
	obj, err := cl.Put(ctx, bytes.NewReader(op.Module))
	if err == nil {
		spec.Module = obj.ID
		_, err = cl.AddOperation(ctx, spec)
	}
	return err
}

// runs starts a cluster of transport tname, in this process or across
// cfg.Net, and runs the jobs.
func runs(ctx context.Context, cfg Config, tname string) ([]Result, error) {
	base, topts := transports.SplitTLS(tname, cfg.Options)
	nc, op := cfg.Net, cfg.Op
	var cl *client.Client
	if nc != nil {
		c, stop, err := nc.Start(ctx, base, topts, cfg.Workers, cfg.Threads, cfg.Window)
		if err != nil {
			return nil, err
		}
		defer stop()
		before := nc.Bed().Stats()
		defer func() { netem.WriteDelta(cfg.Log, before, nc.Bed().Stats()) }()
		cl = c
	} else {
		specs := make([]cluster.WorkerSpec, cfg.Workers)
		for i := range specs {
			specs[i] = cluster.WorkerSpec{Threads: cfg.Threads, Transport: base}
		}
		var open func(string, store.Config) (store.Store, error)
		if cfg.OpenStore != nil {
			var err error
			if open, err = cfg.OpenStore(); err != nil {
				return nil, err
			}
		}
		c, err := cluster.Start(ctx, cluster.Config{Workers: specs, Window: cfg.Window, Transports: topts, OpenStore: open})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cl = c.Client
	}
	if err := op.register(ctx, cl); err != nil {
		return nil, err
	}
	spec, err := Spec(ctx, cl, op, cfg.Units, cfg.Size, cfg.Log)
	if err != nil {
		return nil, err
	}
	var out []Result
	for range cfg.Runs {
		runtime.GC()
		cpu0 := tperf.CPUSeconds()
		start := time.Now()
		j, err := cl.Submit(ctx, spec)
		if err != nil {
			return nil, err
		}
		r := Result{Transport: tname, Op: op.Name, Workers: cfg.Workers, Threads: cfg.Threads, Units: cfg.Units,
			Size: cfg.Size, Inputs: op.Inputs, Store: cfg.Store, SubmitMS: float64(time.Since(start).Microseconds()) / 1000}
		if nc == nil {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			r.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
		}
		if nc != nil && cfg.Cut != nil {
			lift := nc.CutDuring(ctx, *cfg.Cut)
			j, err = cl.Wait(ctx, j.ID, nil)
			c := lift()
			r.Cut, r.CutMissed, r.Requeued, r.AssocLost = c.Cut, c.Missed, c.Requeued, c.AssocLost
		} else {
			j, err = cl.Wait(ctx, j.ID, nil)
		}
		if err != nil {
			return nil, err
		}
		if j.State != api.JobDone {
			return nil, fmt.Errorf("job %s: %s %s", j.ID, j.State, j.Error)
		}
		r.MakespanMS, r.UnitsPerSec = j.MakespanMS, float64(cfg.Units)/(j.MakespanMS/1000)
		if nc == nil {
			r.CPUPerUnitMS = (tperf.CPUSeconds() - cpu0) * 1000 / float64(cfg.Units)
		}
		out = append(out, r)
	}
	return out, nil
}

// Spec uploads the benchmark's input and makes its job: units repeats of
// one object, op.Input or random bytes of size, or with op.Inputs one unit
// per distinct random object, the objects named by an input list (log
// hears of the upload).
func Spec(ctx context.Context, cl *client.Client, op Op, units, size int, log io.Writer) (api.JobSpec, error) {
	payload := make([]byte, size)
	spec := api.JobSpec{Op: op.Name}
	if len(op.Params) > 0 {
		spec.Params = op.Params
	}
	var list bytes.Buffer
	for i := range units {
		_, _ = rand.Read(payload)
		if op.Input != nil {
			payload = op.Input
		}
		obj, err := cl.Put(ctx, bytes.NewReader(payload))
		if err != nil {
			return spec, err
		}
		if !op.Inputs {
			spec.Input, spec.Repeat = obj.ID, units
			return spec, nil
		}
		fmt.Fprintln(&list, obj.ID)
		if i == 0 {
			fmt.Fprintf(log, "uploading %d objects of %d bytes\n", units, size)
		}
	}
	obj, err := cl.Put(ctx, &list)
	spec.InputList = obj.ID
	return spec, err
}

// WriteTable writes rs as a table, a row per transport: rs holds runs
// results of each, in turn (as Run returns them).
func WriteTable(out io.Writer, rs []Result, runs int) error {
	runs = max(runs, 1)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "transport\top\tworkers×threads\tunits\tbytes/unit\tinputs\tsubmit ms\theap MiB\tbest units/s\tmedian units/s\tmedian CPU ms/unit\t")
	for i := 0; i < len(rs); i += runs {
		group := rs[i:min(i+runs, len(rs))]
		rates, cpu := make([]float64, len(group)), make([]float64, len(group))
		for k, r := range group {
			rates[k], cpu[k] = r.UnitsPerSec, r.CPUPerUnitMS
		}
		slices.Sort(rates)
		slices.Sort(cpu)
		r := group[0]
		inputs := "one"
		if r.Inputs {
			inputs = "each its own"
		}
		cpuText := "-" // runs across the emulated WAN
		if c := benchout.Quantile(cpu, 0.5); c > 0 {
			cpuText = fmt.Sprintf("%.3f", c)
		}
		fmt.Fprintf(w, "%s\t%s\t%d×%d\t%d\t%d\t%s\t%.1f\t%.0f\t%s\t%s\t%s\t\n", r.Transport, r.Op, r.Workers, r.Threads, r.Units, r.Size,
			inputs, r.SubmitMS, r.HeapMiB, benchout.UnitRate(rates[len(rates)-1]), benchout.UnitRate(benchout.Quantile(rates, 0.5)), cpuText)
	}
	return w.Flush()
}

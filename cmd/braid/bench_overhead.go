package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// overheadResult is one run of the overhead benchmark.
type overheadResult struct {
	Transport   string  `json:"transport"`
	Op          string  `json:"op"`
	Workers     int     `json:"workers"`
	Threads     int     `json:"threads"`
	Units       int     `json:"units"`
	Size        int     `json:"size"`
	Inputs      bool    `json:"inputs,omitempty"` // one object per unit (--inputs)
	SubmitMS    float64 `json:"submit_ms"`
	HeapMiB     float64 `json:"heap_mib,omitempty"` // Go heap in use after the submit, in-process runs
	MakespanMS  float64 `json:"makespan_ms"`
	UnitsPerSec float64 `json:"units_per_sec"`
	// With --cut: the path and delay, whether the job ended before the
	// cut, and the server's count of units taken back from workers whose
	// association ended, and of associations it found silent, meanwhile.
	Cut       string `json:"cut,omitempty"`
	CutMissed bool   `json:"cut_missed,omitempty"`
	Requeued  int    `json:"requeued,omitempty"`
	AssocLost int    `json:"assoc_lost,omitempty"`
}

func runBenchOverhead(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench overhead", "[--transport NAME] [--units N] [--runs N] [--net SPEC] [--wasm FILE [--abi ABI]]", e)
	tlist := fs.String("transport", transports.Default, "transports to measure, comma-separated; NAME+tls (sctp+tls, tcp+tls, tcpn+tls) forces data-plane encryption (on loopback it is off by default)")
	units := fs.Int("units", 20000, "units per run")
	runs := fs.Int("runs", 3, "runs per transport (the best and the median are reported)")
	nWorkers := fs.Int("workers", 2, "workers")
	threads := fs.Int("threads", 2, "threads per worker")
	size := fs.Int("size", 19<<10, "bytes of input (and output) per unit")
	window := fs.Int("window", 0, "units in flight per stream to start with (0: the scheduler's 2; feedback grows it, see 'braid server -h')")
	asJSON := fs.Bool("json", false, "print JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the runs (server and workers run in this process) to FILE, for 'go tool pprof'")
	netSpec := fs.String("net", "", "run the server in braid-a and the workers in braid-b, processes joined by an emulated link (root, Linux),\ne.g. \"rtt=50ms,loss=1%,rate=100M\"; see 'braid net -h'")
	cut := fs.String("cut", "", "with a --net of several paths, PATH@DELAY: black-hole that path DELAY into each job, until the job ends\n(a fault test: ptcp's associations over it end within the liveness bound and are made again without it;\nthe job must finish all the same)")
	wasm := fs.String("wasm", "", "run this WebAssembly module, registered as a user operation, instead of the built-in noop\n(make examples builds bin/ops/echo.wasm, a reactor that returns its input)")
	abi := fs.String("abi", api.ABIReactor, "the --wasm module's ABI: command or reactor")
	inputs := fs.Bool("inputs", false, "give each unit an object of its own: upload --units distinct objects and submit\none job over them with an input list (the job of --input-list), not --repeat on one")
	var topts transports.Options
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	op := overheadOp{name: "noop"}
	if *wasm != "" {
		code, err := os.ReadFile(*wasm)
		if err != nil {
			return err
		}
		op = overheadOp{name: "bench-wasm", module: code, abi: *abi}
	}
	var nc *netCluster
	if *netSpec != "" {
		if *cpuProfile != "" {
			return usageErrorf("--cpuprofile profiles this process: not with --net, whose server and workers are others")
		}
		var err error
		var pc *pathCut
		if *cut != "" {
			s, err := netem.Parse(*netSpec)
			if err != nil {
				return usageErrorf("--net: %v", err)
			}
			if pc, err = parseCut(*cut, len(s.Paths)); err != nil {
				return err
			}
		}
		if nc, err = newNetCluster(*netSpec, e); err != nil {
			return err
		}
		defer nc.Close()
		nc.cut = pc
	} else if *cut != "" {
		return usageErrorf("--cut needs --net")
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var all []overheadResult
	for _, tname := range strings.Split(*tlist, ",") {
		op.inputs = *inputs
		rs, err := overheadRuns(ctx, tname, topts, nc, op, *nWorkers, *threads, *units, *size, *runs, *window)
		if err != nil {
			return fmt.Errorf("%s: %w", tname, err)
		}
		all = append(all, rs...)
	}
	if *asJSON {
		return printJSON(e.stdout, all)
	}
	return printOverhead(e, all, *runs)
}

// overheadOp is the operation the overhead benchmark runs: the built-in
// noop, or a user operation's module.
type overheadOp struct {
	name, abi string
	module    []byte
	inputs    bool // one object per unit
}

// register makes op a user operation on cl's server, if it is one.
func (op overheadOp) register(ctx context.Context, cl *client.Client) error {
	if op.module == nil {
		return nil
	}
	obj, err := cl.Put(ctx, bytes.NewReader(op.module))
	if err == nil {
		_, err = cl.AddOperation(ctx, api.OperationSpec{Name: op.name, Module: obj.ID, ABI: op.abi})
	}
	return err
}

// overheadRuns starts a cluster of transport tname, in this process or,
// with nc, through its emulated network, and runs the jobs.
func overheadRuns(ctx context.Context, tname string, topts transports.Options, nc *netCluster, op overheadOp, nWorkers, threads, units, size, runs, window int) ([]overheadResult, error) {
	base, topts := benchTLS(tname, topts)
	var cl *client.Client
	if nc != nil {
		c, stop, err := nc.start(ctx, base, topts, nWorkers, threads, window)
		if err != nil {
			return nil, err
		}
		defer stop()
		before := nc.bed.Stats()
		defer func() { logPathStats(nc.e, before, nc.bed.Stats()) }()
		cl = c
	} else {
		specs := make([]cluster.WorkerSpec, nWorkers)
		for i := range specs {
			specs[i] = cluster.WorkerSpec{Threads: threads, Transport: base}
		}
		c, err := cluster.Start(ctx, cluster.Config{Workers: specs, Window: window, Transports: topts})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		cl = c.Client
	}
	if err := op.register(ctx, cl); err != nil {
		return nil, err
	}
	spec, err := overheadSpec(ctx, cl, op, units, size)
	if err != nil {
		return nil, err
	}
	var out []overheadResult
	for range runs {
		runtime.GC()
		start := time.Now()
		j, err := cl.Submit(ctx, spec)
		if err != nil {
			return nil, err
		}
		r := overheadResult{Transport: tname, Op: op.name, Workers: nWorkers, Threads: threads, Units: units,
			Size: size, Inputs: op.inputs, SubmitMS: float64(time.Since(start).Microseconds()) / 1000}
		if nc == nil {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			r.HeapMiB = float64(ms.HeapInuse) / (1 << 20)
		}
		if nc != nil && nc.cut != nil {
			lift := nc.cutDuring(ctx, &r)
			j, err = cl.Wait(ctx, j.ID, nil)
			lift()
		} else {
			j, err = cl.Wait(ctx, j.ID, nil)
		}
		if err != nil {
			return nil, err
		}
		if j.State != api.JobDone {
			return nil, fmt.Errorf("job %s: %s %s", j.ID, j.State, j.Error)
		}
		r.MakespanMS, r.UnitsPerSec = j.MakespanMS, float64(units)/(j.MakespanMS/1000)
		out = append(out, r)
	}
	return out, nil
}

// overheadSpec uploads the benchmark's input and makes its job: units
// repeats of one random object, or with op.inputs one unit per distinct
// object, the objects named by an input list.
func overheadSpec(ctx context.Context, cl *client.Client, op overheadOp, units, size int) (api.JobSpec, error) {
	payload := make([]byte, size)
	spec := api.JobSpec{Op: op.name}
	var list bytes.Buffer
	for i := range units {
		_, _ = rand.Read(payload)
		obj, err := cl.Put(ctx, bytes.NewReader(payload))
		if err != nil {
			return spec, err
		}
		if !op.inputs {
			spec.Input, spec.Repeat = obj.ID, units
			return spec, nil
		}
		fmt.Fprintln(&list, obj.ID)
		if i == 0 {
			fmt.Fprintf(os.Stderr, "uploading %d objects of %d bytes\n", units, size)
		}
	}
	obj, err := cl.Put(ctx, &list)
	spec.InputList = obj.ID
	return spec, err
}

func printOverhead(e *env, rs []overheadResult, runs int) error {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "transport\top\tworkers×threads\tunits\tbytes/unit\tinputs\tsubmit ms\theap MiB\tbest units/s\tmedian units/s\t")
	for i := 0; i < len(rs); i += runs {
		group := rs[i:min(i+runs, len(rs))]
		rates := make([]float64, len(group))
		for k, r := range group {
			rates[k] = r.UnitsPerSec
		}
		slices.Sort(rates)
		r := group[0]
		inputs := "one"
		if r.Inputs {
			inputs = "each its own"
		}
		fmt.Fprintf(w, "%s\t%s\t%d×%d\t%d\t%d\t%s\t%.1f\t%.0f\t%s\t%s\t\n", r.Transport, r.Op, r.Workers, r.Threads, r.Units, r.Size,
			inputs, r.SubmitMS, r.HeapMiB, benchout.UnitRate(rates[len(rates)-1]), benchout.UnitRate(benchout.Quantile(rates, 0.5)))
	}
	return w.Flush()
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/bench/netcluster"
	"github.com/braidhq/braid/bench/overhead"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/store"
)

// runBenchOverhead is `braid bench overhead`: units/s of a no-op
// operation, or another on a given input, through the whole system
// (bench/overhead).
func runBenchOverhead(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench overhead", "[--transport NAME] [--units N] [--runs N] [--net SPEC] [--op OP | --wasm FILE [--abi ABI]] [--input FILE] [--param K=V]", e)
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
	storeURL := fs.String("store", "", "keep the server's objects in s3://BUCKET[/PREFIX] (a new prefix under it per transport; see 'braid server -h'),\nnot in its data directory")
	s3Endpoint := fs.String("s3-endpoint", "", "the S3 endpoint URL, over AWS_ENDPOINT_URL")
	opName := fs.String("op", "noop", "the built-in operation to run, e.g. blur with an --input image")
	inputFile := fs.String("input", "", "each unit's input: this FILE instead of --size random bytes (an image for --op blur;\na PPM for the C blur example, docs/user-ops.md)")
	var params multiFlag
	fs.Var(&params, "param", "an operation parameter `key=value` (repeatable); a --wasm module declares each as a string")
	inputs := fs.Bool("inputs", false, "give each unit an object of its own: upload --units distinct objects and submit\none job over them with an input list (the job of --input-list), not --repeat on one")
	var topts transports.Options
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *units < 1 || *runs < 1 || *nWorkers < 1 || *threads < 1 || *size < 0 {
		return usageErrorf("--units, --runs, --workers and --threads must be positive, and --size not negative")
	}
	cfg := overhead.Config{Transports: strings.Split(*tlist, ","), Options: topts, Op: overhead.Op{Name: *opName, Inputs: *inputs},
		Units: *units, Runs: *runs, Size: *size, Workers: *nWorkers, Threads: *threads, Window: *window, Log: e.stderr}
	if *wasm != "" {
		if isSet(fs, "op") {
			return usageErrorf("--op names a built-in operation and --wasm runs a module: give one")
		}
		code, err := os.ReadFile(*wasm)
		if err != nil {
			return err
		}
		cfg.Op = overhead.Op{Name: "bench-wasm", Module: code, ABI: *abi, Inputs: *inputs}
	}
	if *storeURL != "" {
		if *netSpec != "" {
			return usageErrorf("--store runs the server in this process: not with --net")
		}
		cfg.Store, cfg.OpenStore = *storeURL, benchStore(*storeURL, *s3Endpoint)
	}
	var err error
	if cfg.Op.Params, err = benchParams(params); err != nil {
		return err
	}
	if *inputFile != "" {
		if *inputs {
			return usageErrorf("--input gives every unit the same object and --inputs each one of its own: give one")
		}
		if cfg.Op.Input, err = os.ReadFile(*inputFile); err != nil {
			return err
		}
	}
	if *netSpec != "" {
		if *cpuProfile != "" {
			return usageErrorf("--cpuprofile profiles this process: not with --net, whose server and workers are others")
		}
		spec, err := netem.Parse(*netSpec)
		if err != nil {
			return usageErrorf("--net: %v", err)
		}
		if *cut != "" {
			if cfg.Cut, err = parseCut(*cut, len(spec.Paths)); err != nil {
				return err
			}
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		if cfg.Net, err = netcluster.New(spec, exe, e.stderr); err != nil {
			return err
		}
		defer cfg.Net.Close()
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
	all, err := overhead.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e.stdout, all)
	}
	return overhead.WriteTable(e.stdout, all, *runs)
}

// benchParams parses --param key=value flags.
func benchParams(params multiFlag) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		k, v, ok := strings.Cut(p, "=")
		if _, dup := out[k]; !ok || k == "" || dup {
			return nil, usageErrorf("--param %q: want key=value, each key once", p)
		}
		out[k] = v
	}
	return out, nil
}

// parseCut reads --cut's PATH@DELAY for a bed of paths paths.
func parseCut(s string, paths int) (*netcluster.Cut, error) {
	p, d, ok := strings.Cut(s, "@")
	i, err := strconv.Atoi(p)
	after, derr := time.ParseDuration(d)
	switch {
	case !ok || err != nil || derr != nil || after < 0:
		return nil, usageErrorf("--cut %q: want PATH@DELAY, e.g. 1@2s", s)
	case paths < 2:
		return nil, usageErrorf("--cut needs a --net spec of two paths or more (\"…; …\")")
	case i < 1 || i >= paths:
		return nil, usageErrorf("--cut %d: path 0 carries the server's API, the heartbeats and every association's first connection; cut path 1 to %d", i, paths-1)
	}
	return &netcluster.Cut{Path: i, After: after}, nil
}

// benchStore opens a store under a new prefix of url for each cluster.
func benchStore(url, endpoint string) func() (func(string, store.Config) (store.Store, error), error) {
	return func() (func(string, store.Config) (store.Store, error), error) {
		var b [6]byte
		_, _ = rand.Read(b[:])
		f := storeFlags{url: strings.TrimSuffix(url, "/") + "/bench-" + hex.EncodeToString(b[:]), endpoint: endpoint}
		var cfg server.Config
		if err := f.apply(&cfg, slog.New(slog.DiscardHandler)); err != nil {
			return nil, err
		}
		return cfg.OpenStore, nil
	}
}

package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/scale"
)

// runBenchScale is `braid bench scale`: thousands of simulated workers and
// a job of a million units through a real server (bench/scale).
func runBenchScale(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench scale", "[--workers N | --sweep N,N,...] [--units U] [--json-out FILE] [--plot DIR]", e)
	var cfg scale.Config
	fs.IntVar(&cfg.Workers, "workers", 10_000, "simulated workers")
	sweep := fs.String("sweep", "", "worker counts to run one after another, e.g. 10,100,1000,10000 (instead of --workers)")
	fs.IntVar(&cfg.Threads, "threads", 1, "threads (streams) per worker")
	fs.IntVar(&cfg.Units, "units", 1_000_000, "units of the one repeat job")
	unitBytes := fs.Int("unit-bytes", 1<<10, "input bytes per unit (the no-op's output is as large)")
	fs.DurationVar(&cfg.Compute, "compute", 0, "modelled compute time of a unit on a worker thread (0: answered at once)")
	fs.StringVar(&cfg.Transport, "transport", "tcpn", "the data plane's transport: tcpn, tcp, sctp, quic or ptcp")
	fs.DurationVar(&cfg.Liveness, "liveness", 0, "the associations' liveness bound, the server's and the workers' (0: the transport's, 3s);\nan association quiet for it is pinged every half of the idle bound (10 times it) both ways, one carrying units every half of it")
	fs.Float64Var(&cfg.Restart, "restart-at", 0, "kill the server (SIGKILL) once this fraction of the job is done, e.g. 0.5, start it again\nand check the job resumes with every unit counted once (0: no restart)")
	fs.StringVar(&cfg.DataDir, "data", "", "the server's data directory, kept afterwards (default: a temporary one, removed)")
	fs.IntVar(&cfg.ServerNice, "server-nice", scale.DefaultServerNice, "the server's nice value: below 0 it gets the CPU before the simulated workers, which share its cores\n(in a deployment they run on other machines); 0 runs it as the bench")
	serverArgs := fs.String("server-args", "", "more flags for the server, space-separated, e.g. \"--window 4\"")
	fs.IntVar(&cfg.PageSize, "page", 100, "page size of the list APIs polled while the job runs")
	fs.DurationVar(&cfg.PollEvery, "poll", 100*time.Millisecond, "pause between polls of each list API")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Minute, "give up on a job not finished after this long")
	jsonOut := fs.String("json-out", "", "write the results, with their provenance, to FILE as JSON")
	plotDir := fs.String("plot", "", "draw the sweep's figures as SVG into DIR")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write CPU profiles taken while the job runs, for 'go tool pprof': this process's (the simulated workers') to FILE,\nthe server's (10 s from 2 s after the submission) to FILE.server")
	if err := parse(fs, args); err != nil {
		return err
	}
	counts := []int{cfg.Workers}
	if *sweep != "" {
		counts = nil
		for _, s := range strings.Split(*sweep, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return usageErrorf("--sweep %q: want worker counts such as 10,100,1000", *sweep)
			}
			counts = append(counts, n)
		}
	}
	if cfg.Workers < 1 || cfg.Threads < 1 || cfg.Units < 1 || *unitBytes < 0 {
		return usageErrorf("--workers, --threads and --units must be positive, --unit-bytes not negative")
	}
	cfg.UnitBytes, cfg.EmptyUnits = *unitBytes, *unitBytes == 0
	cfg.ServerArgs = strings.Fields(*serverArgs)
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Exe, cfg.Log = exe, e.stderr
	rs, err := scale.Sweep(ctx, cfg, counts)
	if len(rs) > 0 {
		if werr := scale.WriteTable(e.stdout, rs); werr != nil {
			return werr
		}
		if *jsonOut != "" {
			if werr := scale.WriteJSON(*jsonOut, rs); werr != nil {
				return werr
			}
		}
		if *plotDir != "" {
			if werr := scale.Plot(*plotDir, rs); werr != nil {
				return werr
			}
		}
	}
	return err
}

// runBenchScalePoll is the hidden `braid bench scale-poll`: the process in
// which `braid bench scale` polls the server's API while its job runs, at
// the server's priority (bench/scale's pollproc.go). It polls until its
// stdin ends, then writes the latencies to its stdout as JSON.
func runBenchScalePoll(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench "+scale.PollCommand, "--base URL [--page N] [--every D] (the token in $"+scale.PollTokenEnv+")", e)
	spec := scale.PollSpec{Token: e.getenv(scale.PollTokenEnv)}
	fs.StringVar(&spec.Base, "base", "", "the server's API, e.g. http://127.0.0.1:8080")
	fs.IntVar(&spec.Page, "page", 100, "page size of the lists")
	fs.DurationVar(&spec.Every, "every", 100*time.Millisecond, "pause between polls of each path")
	if err := parse(fs, args); err != nil {
		return err
	}
	return scale.Poll(ctx, spec, e.stdin, e.stdout)
}

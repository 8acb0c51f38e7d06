package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/bench/netgrid"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// runBenchNet is `braid bench net`: whole jobs through the emulated WAN
// over a grid of conditions, unit sizes and transport settings, and how
// the default setting fares against the best (bench/netgrid).
func runBenchNet(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench net", "[--rtt LIST] [--loss LIST] [--size LIST] [--settings LIST] [--out DIR]", e)
	rtts := fs.String("rtt", "1ms,20ms,50ms,100ms", "round-trip times, comma-separated")
	losses := fs.String("loss", "0,0.1,1", "random loss rates in percent, comma-separated (each direction)")
	rateFlag := fs.String("rate", "100M", "the link's rate each way, bit/s (k, M, G)")
	sizes := fs.String("size", "19456,1048576,16777216", "bytes of input (and output) per unit, comma-separated")
	settingsFlag := fs.String("settings", "sctp,sctp:1,tcp,tcpn,quic,ptcp,ptcp:4,ptcp:8",
		"transport settings, comma-separated: sctp, tcp, tcpn, quic, ptcp; sctp:N fixes N flows (--sctp-flows), ptcp:N N stripes (--ptcp-stripes);\n"+
			"plain sctp and ptcp tune theirs (auto; ptcp as --ptcp-stripes says), and plain sctp is braid's default")
	jobBytes := fs.Int("bytes", 8<<20, "bytes of input per job: units = bytes ÷ size, within [--min-units, --max-units]")
	minUnits := fs.Int("min-units", 4, "fewest units per job (one per worker thread by default)")
	maxUnits := fs.Int("max-units", 400, "most units per job")
	budget := fs.Duration("budget", 30*time.Second, "time budget per job: a job still running is cancelled and rated by the units it finished")
	runs := fs.Int("runs", 1, "jobs per point and setting (the median is reported)")
	minTime := fs.Duration("min-time", 0, "after --runs jobs at a point, a setting runs more until their makespans add up to this\n"+
		"(at most --max-runs jobs), so that points of short jobs, whose rates spread the most, get more of them; 0: --runs only")
	maxRuns := fs.Int("max-runs", 10, "most jobs per point and setting that --min-time runs")
	nWorkers := fs.Int("workers", 2, "workers")
	threads := fs.Int("threads", 2, "threads per worker")
	floor := fs.Float64("floor", 0.9, "the share of the best setting's throughput the default should reach (RESULTS.md lists the points below it)")
	out := fs.String("out", "bench-out/net", "output directory: results.json, results.csv, RESULTS.md and plots, rewritten after each condition")
	render := fs.Bool("render", false, "only rewrite RESULTS.md and the plots from --out's results.json")
	var topts transports.Options
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *render {
		run, err := netgrid.Load(*out)
		if err != nil {
			return err
		}
		return netgrid.Write(*out, run)
	}
	g, err := parseGrid(*rtts, *losses, *sizes, *settingsFlag)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if *runs < 1 || *minUnits < 1 || *maxUnits < *minUnits || *jobBytes < 1 || *budget <= 0 {
		return usageErrorf("--runs, --min-units, --bytes and --budget must be positive, and --max-units at least --min-units")
	}
	if *minTime < 0 {
		return usageErrorf("--min-time %s: want a duration of 0 (off) or more", *minTime)
	}
	if *minTime > 0 && *maxRuns < *runs {
		return usageErrorf("--max-runs %d is below --runs %d: --min-time runs jobs after --runs, up to --max-runs", *maxRuns, *runs)
	}
	if _, err := netem.Parse(g.conds[0].Spec(*rateFlag)); err != nil {
		return usageErrorf("--rate: %v", err)
	}
	run := netgrid.Run{Command: "braid bench " + strings.Join(append([]string{"net"}, args...), " "), Started: time.Now(),
		Default: netgrid.Default.String(), Floor: *floor}
	for _, s := range g.settings {
		run.Settings = append(run.Settings, s.String())
	}
	for _, c := range g.conds {
		nc, err := newNetCluster(c.Spec(*rateFlag), e)
		if err != nil {
			return err
		}
		for _, s := range g.settings {
			rs, err := gridSetting(ctx, nc, c, s, topts, g.sizes, gridJob{workers: *nWorkers, threads: *threads,
				bytes: *jobBytes, minUnits: *minUnits, maxUnits: *maxUnits, budget: *budget, runs: *runs,
				minTime: *minTime, maxRuns: *maxRuns})
			run.Results = append(run.Results, rs...)
			if err != nil {
				nc.Close()
				if werr := netgrid.Write(*out, run); werr != nil { // keep what was measured
					fmt.Fprintf(e.stderr, "net: %v\n", werr)
				}
				return fmt.Errorf("%s, %s: %w", c, s, err)
			}
		}
		nc.Close()
		if err := netgrid.Write(*out, run); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "wrote %s/RESULTS.md\n", *out)
	return nil
}

// grid is what `bench net` runs.
type grid struct {
	conds    []netgrid.Condition
	sizes    []int
	settings []netgrid.Setting
}

func parseGrid(rtts, losses, sizes, settings string) (grid, error) {
	var g grid
	var ds []time.Duration
	for _, v := range splitList(rtts) {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return g, fmt.Errorf("--rtt %q: want durations like 20ms", v)
		}
		ds = append(ds, d)
	}
	var ls []float64
	for _, v := range splitList(losses) {
		l, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || l < 0 || l >= 100 {
			return g, fmt.Errorf("--loss %q: want percentages like 0.1", v)
		}
		ls = append(ls, l)
	}
	for _, d := range ds {
		for _, l := range ls {
			g.conds = append(g.conds, netgrid.Condition{RTT: d, Loss: l})
		}
	}
	for _, v := range splitList(sizes) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 64<<20 {
			return g, fmt.Errorf("--size %q: want bytes from 1 to 64 MiB", v)
		}
		g.sizes = append(g.sizes, n)
	}
	for _, v := range splitList(settings) {
		s, err := netgrid.ParseSetting(v)
		if err != nil {
			return g, err
		}
		if !slices.Contains(g.settings, s) {
			g.settings = append(g.settings, s)
		}
	}
	if len(g.conds) == 0 || len(g.sizes) == 0 || len(g.settings) == 0 {
		return g, errors.New("--rtt, --loss, --size and --settings each need a value")
	}
	return g, nil
}

// gridJob is how each job of the grid is sized and bounded, and how many
// run at each point.
type gridJob struct {
	workers, threads, bytes, minUnits, maxUnits, runs, maxRuns int
	budget, minTime                                            time.Duration
}

// more reports whether a setting runs another job at a point where it ran
// r whose makespans (a cut job's budget) add up to spent: until runs, then
// until minTime or maxRuns.
func (j gridJob) more(r int, spent time.Duration) bool {
	return r < j.runs || (spent < j.minTime && r < j.maxRuns)
}

// gridSetting runs setting s's jobs at condition c, one cluster for all
// the unit sizes unless a job is cut (its units may still be on the
// wire, so the next job gets a fresh cluster).
func gridSetting(ctx context.Context, nc *netCluster, c netgrid.Condition, s netgrid.Setting, topts transports.Options, sizes []int, j gridJob) ([]netgrid.Result, error) {
	switch s.Transport {
	case "sctp":
		topts.SCTPFlows = s.Count // over --sctp-flows: the setting says
	case "ptcp":
		if s.Count > 0 {
			topts.PTCP.RecStripes = s.Count
		}
	}
	var out []netgrid.Result
	var cl *client.Client
	stop := func() {}
	defer func() { stop() }()
	for _, size := range sizes {
		units := min(max(j.bytes/size, j.minUnits), j.maxUnits)
		var spent time.Duration
		for r := 0; j.more(r, spent); r++ {
			if cl == nil {
				fresh, st, err := startGridCluster(ctx, nc, s.Transport, topts, j)
				if err != nil {
					return out, err
				}
				cl, stop = fresh, st
			}
			res, err := gridRun(ctx, cl, units, size, j.budget)
			if err != nil {
				return out, err
			}
			res.RTTMS, res.LossPct, res.Setting, res.Run = float64(c.RTT)/float64(time.Millisecond), c.Loss, s.String(), r
			out = append(out, res)
			spent += time.Duration(res.Seconds * float64(time.Second))
			cut := ""
			if res.Cut {
				cut = fmt.Sprintf(" (cut at %s: %d of %d units)", j.budget, res.Done, res.Units)
				stop()
				cl, stop = nil, func() {}
			}
			fmt.Fprintf(nc.e.stderr, "net: %s, %s units, %s: %s units/s, p99 %.0f ms%s\n",
				c, netgrid.SizeLabel(size), s, benchout.UnitRate(res.UnitsPerSec), res.P99MS, cut)
		}
	}
	return out, nil
}

// startGridCluster starts a cluster for the grid, trying twice: a cluster
// started just after a cut job's was stopped has failed to come up once.
func startGridCluster(ctx context.Context, nc *netCluster, tname string, topts transports.Options, j gridJob) (*client.Client, func(), error) {
	cl, stop, err := nc.start(ctx, tname, topts, j.workers, j.threads, 0)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(nc.e.stderr, "net: the %s cluster did not start (%v); once more\n", tname, err)
		cl, stop, err = nc.start(ctx, tname, topts, j.workers, j.threads, 0)
	}
	return cl, stop, err
}

// gridRun runs one noop job of units repeats of a random object of size
// bytes, cancelling it at the budget.
func gridRun(ctx context.Context, cl *client.Client, units, size int, budget time.Duration) (netgrid.Result, error) {
	res := netgrid.Result{Units: units, Size: size}
	spec, err := overheadSpec(ctx, cl, overheadOp{name: "noop"}, units, size)
	if err != nil {
		return res, err
	}
	j, err := cl.Submit(ctx, spec)
	if err != nil {
		return res, err
	}
	wctx, cancel := context.WithTimeout(ctx, budget)
	_, err = cl.Wait(wctx, j.ID, nil)
	cancel()
	switch {
	case err != nil && ctx.Err() == nil && wctx.Err() != nil:
		res.Cut = true
		res.Seconds = budget.Seconds()
		if _, err := cl.Cancel(ctx, j.ID); err != nil {
			return res, fmt.Errorf("cancel job %s at the budget: %w", j.ID, err)
		}
	case err != nil:
		return res, err
	}
	if j, err = cl.Job(ctx, j.ID, true); err != nil {
		return res, err
	}
	if !res.Cut {
		if j.State != api.JobDone {
			return res, fmt.Errorf("job %s: %s %s", j.ID, j.State, j.Error)
		}
		res.Seconds = j.MakespanMS / 1000
	}
	var lat []float64
	deadline := j.ReceivedAt.Add(budget) // a cut job counts the units done within its budget
	for _, u := range j.Units {          // a unit's states are named as a job's
		if u.State == api.JobDone && u.Sent != nil && u.Returned != nil && (!res.Cut || !u.Returned.After(deadline)) {
			lat = append(lat, float64(u.Returned.Sub(*u.Sent).Microseconds())/1000)
		}
	}
	slices.Sort(lat)
	res.Done = len(lat)
	if !res.Cut {
		res.Done = units
	}
	if res.Seconds > 0 {
		res.UnitsPerSec = float64(res.Done) / res.Seconds
	}
	if len(lat) > 0 {
		res.P50MS, res.P99MS = benchout.Quantile(lat, 0.5), benchout.Quantile(lat, 0.99)
	}
	return res, nil
}

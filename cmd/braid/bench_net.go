package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/netgrid"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// runBenchNet is `braid bench net`: whole jobs through the emulated WAN
// over a grid of conditions, unit sizes and transport settings, and how
// the default setting fares against the best (bench/netgrid).
func runBenchNet(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench net", "[--rtt LIST] [--loss LIST] [--size LIST] [--settings LIST] [--out DIR]", e)
	rtts := fs.String("rtt", "50ms,100ms", "round-trip times, comma-separated")
	losses := fs.String("loss", "0,1", "random loss rates in percent, comma-separated (each direction)")
	rateFlag := fs.String("rate", "100M", "the link's rate each way, bit/s (k, M, G)")
	sizes := fs.String("size", "1048576", "bytes of input (and output) per unit, comma-separated")
	settingsFlag := fs.String("settings", netgrid.Canonical,
		"transport settings, comma-separated, NAME[:N][@CC]: sctp, tcp, tcpn, quic, ptcp; sctp:N fixes N flows (--sctp-flows), ptcp:N N stripes (--ptcp-stripes);\n"+
			"@CC is the hosts' TCP congestion control for tcp, tcpn and ptcp (the bed's cc=; none: --host-cc), sctp's own for sctp (--sctp-cc; none: auto);\n"+
			"plain sctp and ptcp tune their counts (auto; ptcp as --ptcp-stripes says), and sctp@auto is braid's default")
	hostCC := fs.String("host-cc", "", "the hosts' TCP congestion control for TCP settings without @CC and for the others' beds (default: this machine's)")
	bedWait := fs.Duration("bed-wait", 10*time.Minute, "how long to wait for the bed when another process holds it (the grid brings it up once per condition and congestion control)")
	jobBytes := fs.Int("bytes", 16<<20, "bytes of input per job: units = bytes ÷ size, within [--min-units, --max-units]")
	minUnits := fs.Int("min-units", 4, "fewest units per job (one per worker thread by default)")
	maxUnits := fs.Int("max-units", 400, "most units per job")
	budget := fs.Duration("budget", 20*time.Second, "time budget per job: a job still running is cancelled and rated by the units it finished")
	runs := fs.Int("runs", 3, "jobs per point and setting (the median is reported, with their spread)")
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
	if _, err := netem.Parse(g.conds[0].Spec(*rateFlag, "")); err != nil {
		return usageErrorf("--rate: %v", err)
	}
	if _, err := netem.Parse(g.conds[0].Spec(*rateFlag, *hostCC)); *hostCC != "" && err != nil {
		return usageErrorf("--host-cc: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	_, err = netgrid.Run(ctx, netgrid.Config{Conditions: g.conds, Sizes: g.sizes, Settings: g.settings, Rate: *rateFlag,
		Job: netgrid.Job{Workers: *nWorkers, Threads: *threads, Bytes: *jobBytes, MinUnits: *minUnits, MaxUnits: *maxUnits,
			Budget: *budget, Runs: *runs, MinTime: *minTime, MaxRuns: *maxRuns},
		Options: topts, HostCC: *hostCC, BedWait: *bedWait, Exe: exe, Out: *out, Command: "braid bench " + strings.Join(append([]string{"net"}, args...), " "),
		Floor: *floor, Log: e.stderr})
	if err != nil {
		return err
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

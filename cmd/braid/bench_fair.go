package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/fair"
	"github.com/braidhq/braid/internal/transports"
)

// runBenchFair is `braid bench fair`: braid's association beside competing
// TCP flows (or other associations) on one emulated path, and the share
// each takes (bench/fair).
func runBenchFair(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench fair", "[--sides LIST] [--against LIST] [--pairs LIST] [--loss LIST] [--out DIR]", e)
	rtt := fs.Duration("rtt", 50*time.Millisecond, "the path's round-trip time")
	rate := fs.String("rate", "100M", "the path's rate each way, bit/s (k, M, G)")
	queue := fs.String("queue", "1bdp", "the bottleneck's queue: BDPs (1bdp), packets (100p) or bytes (64KB), tail drop")
	losses := fs.String("loss", "0,0.1,1", "random loss rates in percent, comma-separated (both directions); each is a case")
	sides := fs.String("sides", "sctp,sctp:bbr,sctp:cubic,sctp:reno,tcp,tcpn",
		"braid's association's settings, comma-separated: TRANSPORT[:CC[:COUNT]], e.g. sctp (--sctp-cc auto), sctp:bbr,\n"+
			"sctp:reno:16 (reno standing for 16 flows), tcpn:cubic (--tcp-cc; without it the TCP transports run the hosts' own,\n"+
			"which is the competitor's congestion control)")
	against := fs.String("against", "cubic,bbr", "competitors, comma-separated; each setting runs against each: a TCP congestion control (this\n"+
		"process's own bulk flows with TCP_CONGESTION set), iperf3:CC (iperf3 -C CC), or a braid setting (another association)")
	pairs := fs.String("pairs", "sctp/sctp,sctp/tcp:cubic", "further cases, comma-separated SETTING/COMPETITOR (each at every loss rate), e.g. sctp/sctp: two braid associations")
	streams := fs.Int("streams", 4, "streams of braid's association (bulk)")
	flows := fs.Int("flows", 1, "competing flows (or associations) per case")
	dur := fs.Duration("duration", 40*time.Second, "how long each side sends")
	warmup := fs.Duration("warmup", 10*time.Second, "what the rates leave out at the start of the interval both sides ran in")
	runs := fs.Int("runs", 3, "repetitions of every case (they go round the whole grid)")
	goal := fs.Float64("goal", 1.3, "the most braid's association should take on the clean path, in multiples of a competing flow")
	out := fs.String("out", "bench-out/fair", "output directory: results.json, results.csv, RESULTS.md and plots, rewritten after each case")
	render := fs.Bool("render", false, "only rewrite RESULTS.md and the plots from --out's results.json")
	var topts transports.Options
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	if *render {
		rec, err := fair.Load(*out)
		if err != nil {
			return err
		}
		return fair.Write(*out, rec)
	}
	cfg := fair.Config{RTT: *rtt, Rate: *rate, Queue: *queue, Streams: *streams, Flows: *flows, Duration: *dur,
		Warmup: *warmup, Runs: *runs, Goal: *goal, Options: topts, Out: *out, Log: e.stderr,
		Command: "braid bench " + strings.Join(append([]string{"fair"}, args...), " ")}
	if err := parseFairLists(&cfg, *losses, *sides, *against, *pairs); err != nil {
		return usageErrorf("%v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Exe = exe
	rec, err := fair.Run(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, fair.Table(fair.Summarize(rec.Results)))
	fmt.Fprintf(e.stdout, "wrote %s/RESULTS.md\n", *out)
	return nil
}

// parseFairLists reads bench fair's list flags into cfg.
func parseFairLists(cfg *fair.Config, losses, sides, against, pairs string) error {
	cfg.Losses = []float64{}
	for _, v := range splitList(losses) {
		l, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if err != nil || l < 0 || l >= 100 {
			return fmt.Errorf("--loss %q: want percentages like 0.1", v)
		}
		cfg.Losses = append(cfg.Losses, l)
	}
	if len(cfg.Losses) == 0 {
		return fmt.Errorf("--loss: want at least one rate")
	}
	for _, v := range splitList(sides) {
		s, err := fair.ParseSide(v)
		if err != nil {
			return err
		}
		cfg.Sides = append(cfg.Sides, s)
	}
	for _, v := range splitList(against) {
		c, err := fair.ParseCompetitor(v)
		if err != nil {
			return err
		}
		cfg.Against = append(cfg.Against, c)
	}
	for _, v := range splitList(pairs) {
		p, err := fair.ParsePair(v)
		if err != nil {
			return err
		}
		cfg.Pairs = append(cfg.Pairs, p)
	}
	return nil
}

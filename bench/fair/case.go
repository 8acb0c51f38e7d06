package fair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/netem"
)

// Result is one case: braid's association beside its competitor on one
// path, the rates over the shared interval after the warm-up.
type Result struct {
	LossPct float64 `json:"loss_pct"`
	Side    string  `json:"side"`    // braid's association, as ParseSide reads it
	Against string  `json:"against"` // the competitor, as ParseCompetitor reads it
	Flows   int     `json:"flows"`   // the competitor's flows (or associations)
	Run     int     `json:"run"`
	Spec    string  `json:"spec"` // the bed's, netem's syntax
	// CC is the congestion control the competitor's senders ran, as
	// their sockets (or iperf3) said.
	CC      string    `json:"competitor_cc"`
	Started time.Time `json:"started"`
	// Load is the machine's one-minute load average at the case's start
	// and end.
	Load [2]float64 `json:"load"`
	// WindowS is the length of the interval the rates are over: the
	// shared interval less the warm-up and the tail.
	WindowS float64 `json:"window_s"`
	// SideMbps is braid's association's rate, FlowMbps each competing
	// flow's, in Mbit/s at their receivers (payload).
	SideMbps float64   `json:"side_mbps"`
	FlowMbps []float64 `json:"flow_mbps"`
	// Ratio is SideMbps over the competing flows' mean.
	Ratio float64 `json:"ratio"`
	// Jain is Jain's index over the association and every flow.
	Jain float64 `json:"jain"`
	// Timeline is each side's rate per second of the shared interval, the
	// association first.
	Timeline [][]float64 `json:"timeline"`
	// Error is why the case failed, if it did (and then nothing was
	// measured).
	Error string `json:"error,omitempty"`
}

// Mean is the competing flows' mean rate.
func (r Result) Mean() float64 {
	var sum float64
	for _, v := range r.FlowMbps {
		sum += v
	}
	return sum / float64(max(len(r.FlowMbps), 1))
}

// timelineBin is the width of Result.Timeline's bins.
const timelineBin = time.Second

// ports of a case's sides: braid's association takes tperf's, the own
// flows and iperf3 these.
const competitorPort = 47000

// runCase runs one case on a bed of its own.
func runCase(ctx context.Context, cfg Config, p Pair, loss float64, run int) (Result, error) {
	spec := cfg.spec(loss, p.Against.HostCC())
	res := Result{LossPct: loss, Side: p.Side.String(), Against: p.Against.String(), Flows: cfg.Flows, Run: run, Spec: spec}
	ns, err := netem.Parse(spec)
	if err != nil {
		return res, err
	}
	bed, err := netem.Up(ns, netem.Options{Wait: cfg.BedWait})
	if err != nil {
		return res, err
	}
	defer bed.Close()
	nb, err := tperf.NewNet(tperf.NetConfig{Bed: bed, Exe: cfg.Exe, Duration: cfg.Duration, Options: cfg.Options, Log: cfg.Log})
	if err != nil {
		return res, err
	}
	defer nb.Close()
	res.Started, res.Load[0] = time.Now(), benchout.LoadAvg()
	series, cc, err := runSides(ctx, cfg, nb, p)
	res.Load[1], res.CC = benchout.LoadAvg(), cc
	if err != nil {
		return res, err
	}
	return res, res.measure(series, cfg.Warmup)
}

// runSides runs braid's association and the competitor side by side and
// returns what their receivers recorded, the association first.
func runSides(ctx context.Context, cfg Config, nb *tperf.Net, p Pair) ([]Series, string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	side, err := nb.Start(ctx, tperf.Test{Transport: p.Side.Transport, Mode: "bulk", Streams: cfg.Streams,
		Args: p.Side.Args(), Samples: true})
	if err != nil {
		return nil, "", fmt.Errorf("fair: %s: %w", p.Side, err)
	}
	comp, err := startCompetitor(ctx, cfg, nb, p.Against)
	if err != nil {
		cancel()
		_, _ = side.Wait()
		return nil, "", fmt.Errorf("fair: %s: %w", p.Against, err)
	}
	_, serr := side.Wait()
	flows, cc, cerr := comp.wait()
	if err := errors.Join(serr, cerr); err != nil {
		return nil, cc, err
	}
	samples, err := side.Samples()
	if err != nil {
		return nil, cc, err
	}
	return append([]Series{samples}, flows...), cc, nil
}

// startCompetitor starts the competitor's flows.
func startCompetitor(ctx context.Context, cfg Config, nb *tperf.Net, c Competitor) (competitor, error) {
	addr, _ := netem.PathAddrs(0)
	switch c.Kind {
	case KindTCP:
		return startTCPFlows(ctx, cfg.Flows, c.CC, addr, competitorPort, cfg.Duration)
	case KindIperf3:
		return startIperf3(ctx, cfg.Flows, c.CC, addr, competitorPort, cfg.Duration, cfg.RTT)
	}
	b := &braidFlows{name: c.Side.String()}
	for range cfg.Flows {
		r, err := nb.Start(ctx, tperf.Test{Transport: c.Side.Transport, Mode: "bulk", Streams: cfg.Streams,
			Args: c.Side.Args(), Samples: true})
		if err != nil {
			_, _, _ = b.wait()
			return nil, err
		}
		b.runs = append(b.runs, r)
	}
	return b, nil
}

// braidFlows are further braid associations.
type braidFlows struct {
	name string
	runs []*tperf.Running
}

func (b *braidFlows) wait() ([]Series, string, error) {
	var out []Series
	var errs []error
	for _, r := range b.runs {
		_, err := r.Wait()
		if err == nil {
			var s []tperf.Sample
			s, err = r.Samples()
			out = append(out, s)
		}
		errs = append(errs, err)
	}
	return out, b.name, errors.Join(errs...)
}

// measure fills in the rates from the receivers' series (the
// association's first) over the shared interval less the warm-up and
// the tail.
func (r *Result) measure(ss []Series, warmup time.Duration) error {
	from, to, ok := Shared(ss)
	if !ok {
		return errors.New("fair: the sides never ran at the same time (one received nothing)")
	}
	start, end := from.Add(warmup), to.Add(-Tail)
	if end.Sub(start) < minWindow {
		return fmt.Errorf("fair: the sides ran together for %s, which leaves less than %s after the %s warm-up",
			to.Sub(from).Round(time.Millisecond), minWindow, warmup)
	}
	r.WindowS = end.Sub(start).Seconds()
	rates := make([]float64, len(ss))
	for i, s := range ss {
		rates[i] = s.Mbps(start, end)
		r.Timeline = append(r.Timeline, round2(s.Bins(from, to, timelineBin)))
	}
	r.SideMbps, r.FlowMbps = rates[0], rates[1:]
	if m := r.Mean(); m > 0 {
		r.Ratio = r.SideMbps / m
	}
	r.Jain = Jain(rates)
	return nil
}

func round2(xs []float64) []float64 {
	for i, x := range xs {
		xs[i] = float64(int64(x*100+0.5)) / 100
	}
	return xs
}

package fair

import (
	"context"
	"fmt"
	"time"

	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/netem"
)

// Record is a fairness run as its files keep it (results.json).
type Record struct {
	Command string    `json:"command"`
	Started time.Time `json:"started"`
	// The path and the load, as Config had them.
	RTTMS     float64 `json:"rtt_ms"`
	Rate      string  `json:"rate"`
	Queue     string  `json:"queue"`
	Streams   int     `json:"streams"`
	Flows     int     `json:"flows"`
	DurationS float64 `json:"duration_s"`
	WarmupS   float64 `json:"warmup_s"`
	// Path is each direction of the clean path as the bed describes it
	// (delay, rate, queue resolved to bytes or packets).
	Path    string   `json:"path"`
	Goal    float64  `json:"goal"`
	Runs    int      `json:"runs"`
	Results []Result `json:"results"`
	// Provenance is the commit, kernel, Go and flags of the run.
	Provenance *benchout.Provenance `json:"provenance,omitempty"`
}

// Run runs every case (Config), writing the files into cfg.Out after
// each, and returns the record. A case that fails is kept with its error
// and the run goes on; ctx's end stops it.
func Run(ctx context.Context, cfg Config) (Record, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Record{}, err
	}
	prov := benchout.Here()
	rec := Record{Command: cfg.Command, Started: time.Now().UTC(), RTTMS: float64(cfg.RTT) / float64(time.Millisecond),
		Rate: cfg.Rate, Queue: cfg.Queue, Streams: cfg.Streams, Flows: cfg.Flows, DurationS: cfg.Duration.Seconds(),
		WarmupS: cfg.Warmup.Seconds(), Goal: cfg.Goal, Runs: cfg.Runs, Provenance: &prov}
	if ns, err := netem.Parse(cfg.spec(0, "")); err == nil && len(ns.Paths) > 0 {
		rec.Path = ns.Paths[0].BA.String()
	}
	cases := cfg.cases()
	total, n := cfg.Runs*len(cfg.Losses)*len(cases), 0
	// Repetitions go round the whole grid, so that each setting's runs
	// meet the machine at different times.
	for run := 1; run <= cfg.Runs; run++ {
		for _, loss := range cfg.Losses {
			for _, p := range cases {
				n++
				fmt.Fprintf(cfg.Log, "fair: case %d of %d: %s against %d× %s, %v%% loss, run %d (load %.1f)\n",
					n, total, p.Side, cfg.Flows, p.Against, loss, run, benchout.LoadAvg())
				r, err := runCase(ctx, cfg, p, loss, run)
				if ctx.Err() != nil {
					return rec, ctx.Err()
				}
				if err != nil {
					r.Error = err.Error()
					fmt.Fprintf(cfg.Log, "fair: case failed: %v\n", err)
				} else {
					fmt.Fprintf(cfg.Log, "fair: %s %.1f Mbit/s, %s %v Mbit/s: %.2f×, Jain %.3f\n",
						r.Side, r.SideMbps, r.Against, round2(append([]float64(nil), r.FlowMbps...)), r.Ratio, r.Jain)
				}
				rec.Results = append(rec.Results, r)
				if err := Write(cfg.Out, rec); err != nil {
					return rec, err
				}
			}
		}
	}
	return rec, nil
}

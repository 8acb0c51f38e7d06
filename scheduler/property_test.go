package scheduler_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/scheduler/schedsim"
)

// TestRandomClusters drives the core through random clusters in the
// simulator, which fails the run if a unit is accepted twice or never, is
// sent to a worker that cannot run it, or overfills a stream's window, or
// if a job never completes, or if a worker has more input bytes in flight
// than it says it holds (beyond a lone unit) or than the core counts.
// Workers differ in speed, streams, operations and what they hold; some go
// down and come back, some send Feedback; jobs' units differ in size.
func TestRandomClusters(t *testing.T) {
	ops := []string{"blur", "sobel", "resize"}
	for seed := range uint64(300) {
		cfg := randomCluster(rand.New(rand.NewPCG(seed, 7)), ops)
		cfg.Seed = seed
		if _, err := schedsim.Run(cfg); err != nil {
			t.Fatalf("seed %d: %v\nconfig: %+v", seed, err, cfg)
		}
	}
}

func randomCluster(r *rand.Rand, ops []string) schedsim.Config {
	cfg := schedsim.Config{
		Core: scheduler.Config{Window: r.IntN(3), MaxWindow: r.IntN(5),
			SpeculateAfter: []float64{0, 1, 2}[r.IntN(3)],
			ByteHorizon:    []time.Duration{0, -1, 10 * time.Millisecond}[r.IntN(3)]},
		Jitter:   r.Float64() * 0.5,
		Feedback: r.IntN(2) == 0,
	}
	n := 1 + r.IntN(5)
	for i := range n {
		w := schedsim.Worker{Name: fmt.Sprintf("w%d", i), Streams: 1 + r.IntN(4), Threads: r.IntN(5),
			UnitTime: time.Duration(1+r.IntN(20)) * 100 * time.Millisecond, Ops: ops,
			HoldBytes: []int64{0, 0, 2500, 100_000}[r.IntN(4)]}
		if i > 0 { // w0 can run everything and stays up
			w.Ops = pick(r, ops)
			if r.IntN(3) == 0 {
				w.DownAt = time.Duration(r.IntN(10_000)) * time.Millisecond
				if r.IntN(2) == 0 {
					w.UpAt = w.DownAt + time.Duration(r.IntN(10_000))*time.Millisecond
				}
			}
		}
		cfg.Workers = append(cfg.Workers, w)
	}
	for i := range 1 + r.IntN(3) {
		cfg.Jobs = append(cfg.Jobs, schedsim.Job{Name: fmt.Sprintf("j%d", i),
			Policy: scheduler.PolicyNames[r.IntN(len(scheduler.PolicyNames))],
			Units:  1 + r.IntN(60), Op: ops[r.IntN(len(ops))], Speculate: r.IntN(2) == 0,
			Size: []int64{0, 100, 1000, 5000}[r.IntN(4)], LateSize: r.IntN(4) == 0, Listed: r.IntN(2) == 0})
	}
	return cfg
}

func pick(r *rand.Rand, ops []string) []string {
	var out []string
	for _, op := range ops {
		if r.IntN(2) == 0 {
			out = append(out, op)
		}
	}
	if len(out) == 0 {
		out = ops[:1]
	}
	return out
}

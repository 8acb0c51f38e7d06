package chaos

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// Run runs the cluster, injects cfg's schedule of faults, waits for the
// jobs and checks the invariants. The Report says what happened; Run's
// error is for a run that could not be carried out at all (a violated
// invariant is in Report.Violations, not an error).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &Report{Transport: cfg.Transport, Seed: cfg.Seed, Duration: cfg.Duration, Workers: cfg.Workers, Threads: cfg.Threads}
	cleanup, err := makeDir(&cfg)
	if err != nil {
		return nil, err
	}
	want, err := computeExpected()
	if err != nil {
		cleanup()
		return nil, err
	}
	c, err := startCluster(&cfg)
	if err != nil {
		cleanup()
		return nil, err
	}
	obsCtx, stopObs := context.WithCancel(ctx)
	o := newObserver(c.url, c.token)
	var bg sync.WaitGroup
	bg.Go(func() { o.run(obsCtx) })
	defer func() {
		stopObs()
		bg.Wait()
		c.close()
		rep.Dir = cfg.Dir
		if len(rep.Violations) == 0 {
			cleanup()
			rep.Dir = ""
		}
	}()
	if err := c.waitUp(ctx, o, 30*time.Second); err != nil {
		rep.Violations = append(rep.Violations, err.Error()) // keeps the logs
		return rep, err
	}
	cl := client.New(c.url).WithToken(c.token).WithRetry(client.Retry{For: math.MaxInt64}).WithHTTPClient(&http.Client{Timeout: time.Minute})
	if err := upload(ctx, cl); err != nil {
		return nil, err
	}
	in := &injector{c: c, o: o, cfg: &cfg}
	js := &jobs{c: cl, units: cfg.Units}
	accepted := runFaults(ctx, &cfg, in, js, want)
	rep.Outcomes = in.outcomes()
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	verify(ctx, &cfg, c, o, cl, accepted, want, rep)
	return rep, nil
}

// runFaults keeps jobs running while the schedule's faults are injected,
// then waits (up to cfg.Recovery) for the jobs still running. It returns
// the ids of the jobs the server accepted.
func runFaults(ctx context.Context, cfg *Config, in *injector, js *jobs, want expected) []string {
	stop := make(chan struct{})
	jctx, cancelJobs := context.WithCancel(ctx)
	defer cancelJobs()
	var submitters sync.WaitGroup
	repeat := api.JobSpec{Op: "blur", Input: want.gif, Params: repeatParams, Repeat: cfg.Units, Speculate: new(bool)}
	tiled := api.JobSpec{Op: "blur", Input: want.png, Params: tiledParams, Tiles: tiles, Speculate: new(bool)}
	for _, spec := range []api.JobSpec{repeat, tiled} {
		submitters.Go(func() { js.run(jctx, stop, spec) })
	}
	var faults sync.WaitGroup
	start := time.Now()
	for _, f := range window(Plan(cfg.Seed, cfg.Duration, cfg.Workers), cfg.From) {
		sleep(ctx, time.Until(start.Add(f.At)))
		if ctx.Err() != nil {
			break
		}
		faults.Go(func() { in.apply(ctx, f) })
	}
	sleep(ctx, time.Until(start.Add(cfg.Duration-shift(cfg.From))))
	faults.Wait()
	close(stop)
	fmt.Fprintf(cfg.Log, "faults over after %v; waiting for the jobs\n", time.Since(start).Round(time.Second))
	done := make(chan struct{})
	go func() { submitters.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(cfg.Recovery):
		js.fail("jobs still running %v after the faults stopped", cfg.Recovery)
		cancelJobs()
		<-done
	case <-ctx.Done():
		cancelJobs()
		<-done
	}
	return js.ids()
}

// verify checks the jobs and the workers' threads after the faults.
func verify(ctx context.Context, cfg *Config, c *cluster, o *observer, cl *client.Client, accepted []string, want expected, rep *Report) {
	v := check(ctx, cl, accepted, want)
	rep.Jobs, rep.Tiled, rep.Units, rep.SentAgain = v.jobs, v.tiled, v.units, v.again
	rep.Violations = append(rep.Violations, v.violations...)
	rep.Violations = append(rep.Violations, checkThreads(ctx, cfg, c, o, cl, want)...)
	for _, res := range rep.Outcomes {
		if res.unnoticed {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%v: the server never noticed (bound %v)", res.fault, res.bound))
		}
		if res.unrecovery {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%v: not up again within %v", res.fault, recoverWithin))
		}
		if res.stuck {
			rep.Violations = append(rep.Violations, fmt.Sprintf("%v: the graceful stop did not end within %v", res.fault, drainTimeout+stopSlack))
		}
	}
	if len(rep.Violations) > 0 {
		rep.Violations = append(rep.Violations, "server log tail:\n"+logTail(c.server, 4000))
	}
}

// makeDir creates cfg.Dir if it is unset and returns how to remove it.
func makeDir(cfg *Config) (func(), error) {
	if cfg.Dir != "" {
		return func() {}, os.MkdirAll(cfg.Dir, 0o755)
	}
	dir, err := os.MkdirTemp("", "braid-chaos-"+strings.ReplaceAll(cfg.Transport, "/", "-")+"-*")
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	return func() { os.RemoveAll(dir) }, nil
}

// window keeps the faults from from on, moved earlier by shift(from).
func window(plan []Fault, from time.Duration) []Fault {
	if from <= 0 {
		return plan
	}
	var out []Fault
	for _, f := range plan {
		if f.At >= from {
			f.At -= shift(from)
			out = append(out, f)
		}
	}
	return out
}

// shift is how much earlier a replay from from runs the schedule: it
// starts 2 s before from, so the cluster is up when the first fault comes.
func shift(from time.Duration) time.Duration {
	return max(from-2*time.Second, 0)
}

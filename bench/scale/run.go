package scale

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/benchout"
)

// upTimeout bounds bringing the fleet up; idleWindow is how long the
// heartbeats of an idle fleet are measured at least (idle says how long).
const (
	upTimeout  = 10 * time.Minute
	idleWindow = 5 * time.Second
	idleLong   = 30 * time.Second
)

// Run brings up a server and cfg.Workers simulated workers, runs one job of
// cfg.Units units on them, and measures. The error is for a run that could
// not be made; a run whose units were not all counted once returns its
// Result and an error saying so.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	cfg.ServerNice = serverNice(cfg.ServerNice, cfg.Log)
	r := Result{Workers: cfg.Workers, Threads: cfg.Threads, Units: cfg.Units, UnitBytes: cfg.UnitBytes,
		ComputeMS: float64(cfg.Compute) / float64(time.Millisecond), Transport: cfg.Transport, LoadAvg: benchout.LoadAvg(),
		LivenessMS: float64(cfg.Liveness) / float64(time.Millisecond), ServerNice: cfg.ServerNice}
	limit, err := raiseFileLimit(filesNeeded(cfg.Workers, cfg.Threads))
	if err != nil {
		return r, err
	}
	r.FileLimit = limit
	if need := filesNeeded(cfg.Workers, cfg.Threads); limit < need {
		fmt.Fprintf(cfg.Log, "scale: open-file limit %d (the hard limit: raising it needs CAP_SYS_RESOURCE), below the %d this run may want\n", limit, need)
	} else {
		fmt.Fprintf(cfg.Log, "scale: open-file limit raised to %d (this process and the server's)\n", limit)
	}
	dir := cfg.DataDir
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return r, err
		}
	} else {
		if dir, err = os.MkdirTemp("", "braid-scale-"); err != nil {
			return r, err
		}
		defer func() { // kept, with the server's log, if the run failed
			if err == nil {
				os.RemoveAll(dir)
			}
		}()
	}
	e, err := newEnv(ctx, cfg, dir)
	if err != nil {
		return r, err
	}
	defer e.close()
	err = e.measure(ctx, &r)
	r.BenchCPUS = selfCPU().Seconds()
	return r, err
}

// env is a run's server, fleet and clients.
type env struct {
	cfg    Config
	sp     *serverProc
	base   string
	token  string
	hc     *http.Client // the bench's own calls: submit, wait (the pollers run in a child: pollproc.go)
	admin  *client.Client
	f      *fleet
	cancel context.CancelFunc // stops the fleet
}

func newEnv(ctx context.Context, cfg Config, dir string) (*env, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	secret := hex.EncodeToString(b[:])
	args := cfg.ServerArgs
	if cfg.Liveness > 0 {
		args = append([]string{"--liveness", cfg.Liveness.String()}, args...)
	}
	sp, err := newServerProc(cfg.Exe, dir, secret, args, cfg.ServerNice)
	if err != nil {
		return nil, err
	}
	if err := sp.firstStart(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "scale: server pid %d at http://%s, profiles at http://%s/debug/pprof/, log %s\n",
		sp.pid(), sp.api, sp.debug, sp.logPath)
	e := &env{cfg: cfg, sp: sp, base: "http://" + sp.api, cancel: func() {}}
	if e.token, err = sp.adminToken(); err != nil {
		e.close()
		return nil, err
	}
	ht := http.DefaultTransport.(*http.Transport).Clone()
	ht.MaxIdleConnsPerHost = 16
	e.hc = &http.Client{Transport: ht}
	e.admin = client.New(e.base).WithHTTPClient(e.hc).WithToken(e.token)
	if e.f, err = newFleet(cfg, e.base, []byte(secret)); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	e.cancel()
	if e.f != nil {
		e.f.close()
	}
	e.sp.stop(10 * time.Second)
	if e.f != nil {
		e.f.wait()
	}
}

// measure brings the fleet up, measures it idle, then runs the job.
func (e *env) measure(ctx context.Context, r *Result) error {
	fctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	if err := e.up(fctx, r); err != nil {
		return err
	}
	if err := e.idle(ctx, r); err != nil {
		return err
	}
	return e.job(ctx, r)
}

// up registers the fleet and waits for every association.
func (e *env) up(ctx context.Context, r *Result) error {
	fmt.Fprintf(e.cfg.Log, "scale: registering %d workers × %d threads (%s)\n", e.cfg.Workers, e.cfg.Threads, e.cfg.Transport)
	if err := e.f.run(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(upTimeout)
	last := time.Now()
	for e.f.assocs.Load() < int64(e.cfg.Workers) {
		if time.Now().After(deadline) {
			return fmt.Errorf("scale: %d of %d associations up after %v (%d registered)", e.f.assocs.Load(), e.cfg.Workers, upTimeout, e.f.regs.Load())
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			fmt.Fprintf(e.cfg.Log, "scale: %d registered, %d associations up\n", e.f.regs.Load(), e.f.assocs.Load())
		}
	}
	r.RegisterS = time.Since(time.Unix(0, e.f.firstReg.Load())).Seconds()
	fmt.Fprintf(e.cfg.Log, "scale: %d workers up in %.1f s\n", e.cfg.Workers, r.RegisterS)
	return nil
}

// idle measures the heartbeats of the fleet with no job, and the server's
// CPU meanwhile, once the fleet has settled, over a whole heartbeat
// interval (at least idleWindow; both at most idleLong). It waits an
// interval first, since the workers that registered early were told a
// short interval (the server paces by the workers it had) and beat at it
// until their next answer, and the last associations' leases and wants
// are still under way; and it measures over an interval, in which each
// worker beats once, since the fleet's beats are spread unevenly over one
// (those told a short interval first beat in a bunch).
func (e *env) idle(ctx context.Context, r *Result) error {
	every := min(time.Duration(e.f.interval.Load()), idleLong)
	window := max(every, idleWindow)
	fmt.Fprintf(e.cfg.Log, "scale: idle: settling for %v, then measuring for %v\n", every, window)
	if err := sleep(ctx, every); err != nil {
		return err
	}
	s0, err := e.sp.stats()
	if err != nil {
		return err
	}
	b0, t0 := e.f.beats.Load(), time.Now()
	if err := sleep(ctx, window); err != nil {
		return err
	}
	s1, err := e.sp.stats()
	if err != nil {
		return err
	}
	span := time.Since(t0)
	r.HeartbeatsPerS = float64(e.f.beats.Load()-b0) / span.Seconds()
	r.HeartbeatMS = float64(e.f.interval.Load()) / float64(time.Millisecond)
	r.IdleCPUPct = 100 * float64(s1.CPU-s0.CPU) / float64(span)
	fmt.Fprintf(e.cfg.Log, "scale: idle: %.0f heartbeats/s (every %.0f ms), server CPU %.1f%% of a core\n",
		r.HeartbeatsPerS, r.HeartbeatMS, r.IdleCPUPct)
	return nil
}

// job runs the one job and takes the measures of its run.
func (e *env) job(ctx context.Context, r *Result) error {
	input := make([]byte, e.cfg.UnitBytes)
	_, _ = rand.Read(input)
	obj, err := e.admin.Put(ctx, bytes.NewReader(input))
	if err != nil {
		return fmt.Errorf("scale: upload the input: %w", err)
	}
	before, err := e.sp.heap(ctx, true)
	if err != nil {
		return fmt.Errorf("scale: the server's heap: %w", err)
	}
	cpu0, err := e.sp.stats()
	if err != nil {
		return err
	}
	jctx, stop := context.WithCancel(ctx)
	defer stop()
	polls, err := startPollProc(e.cfg.Exe, PollSpec{Base: e.base, Token: e.token, Page: e.cfg.PageSize, Every: e.cfg.PollEvery}, e.cfg.ServerNice)
	if err != nil {
		return err
	}
	smp := &sampler{sp: e.sp}
	probe := &liveProbe{e: e, gc0: before.NumGC}
	var wg sync.WaitGroup
	wg.Go(func() { smp.run(jctx) })
	start := time.Now()
	j, err := e.admin.Submit(ctx, api.JobSpec{Op: "noop", Input: obj.ID, Repeat: e.cfg.Units})
	if err != nil {
		stop()
		wg.Wait()
		_, _ = polls.finish()
		return fmt.Errorf("scale: submit: %w", err)
	}
	fmt.Fprintf(e.cfg.Log, "scale: job %s of %d units submitted in %v\n", j.ID, e.cfg.Units, time.Since(start).Round(time.Millisecond))
	var prof *profiles
	if e.cfg.CPUProfile != "" {
		if prof, err = startProfiles(jctx, e.cfg.CPUProfile, e.sp.debug); err != nil {
			fmt.Fprintf(e.cfg.Log, "%v\n", err)
		}
	}
	if e.cfg.Restart > 0 {
		wg.Go(func() { e.restartAt(jctx, j.ID, r) })
	}
	wg.Go(func() { probe.run(jctx, j.ID) })
	final, err := e.wait(ctx, j.ID, start)
	makespan := time.Since(start)
	cpu1, serr := e.sp.stats()
	if prof != nil {
		if perr := prof.stop(); perr != nil {
			fmt.Fprintf(e.cfg.Log, "%v\n", perr)
		}
	}
	stop()
	wg.Wait()
	rep, perr := polls.finish()
	if err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if perr != nil {
		return perr
	}
	// The server forgets a finished job's scheduling state at its next
	// housekeeping tick (100 ms); what it keeps after that is what it
	// retains per finished unit.
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	after, err := e.sp.heap(ctx, true)
	if err != nil {
		return fmt.Errorf("scale: the server's heap: %w", err)
	}
	r.MakespanS = makespan.Seconds()
	r.UnitsPerS = float64(e.cfg.Units) / makespan.Seconds()
	r.ServerCPUS = (cpu1.CPU - cpu0.CPU).Seconds()
	r.HeapBeforeBytes, r.HeapPeakBytes = before.HeapInuse, max(smp.peakHeap(), before.HeapInuse)
	r.HeapInusePerUnit = float64(r.HeapPeakBytes-before.HeapInuse) / float64(e.cfg.Units)
	r.LiveBeforeBytes, r.LivePeakBytes = before.Live, max(probe.peak(), before.Live)
	r.ServerBytesPerUnit = float64(r.LivePeakBytes-before.Live) / float64(e.cfg.Units)
	r.RetainedBytesPerUnit = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(e.cfg.Units)
	r.ServerRSSPeak, r.ServerRSS, r.ServerFDs = max(cpu1.HWM, smp.peakRSS()), cpu1.RSS, max(cpu1.FDs, smp.peakFDs())
	if fi, err := os.Stat(filepath.Join(e.sp.dir, "data", "state.db")); err == nil {
		r.StateDBBytes = fi.Size()
	}
	latencies(r, rep)
	r.Answered, r.Results = e.f.answered.count(e.cfg.Units), int(e.f.results.Load())
	r.Done = final.Progress.Done
	for _, n := range final.UnitsPerWorker {
		r.Counted += n
	}
	fmt.Fprintf(e.cfg.Log, "scale: job %s %s in %.1f s: %.0f units/s\n", j.ID, final.State, r.MakespanS, r.UnitsPerS)
	if final.State != api.JobDone || !r.OK() {
		return fmt.Errorf("scale: job %s ended %s (%s): %d units done, %d counted, %d answered by the workers, of %d",
			j.ID, final.State, final.Error, r.Done, r.Counted, r.Answered, r.Units)
	}
	return nil
}

// latencies fills in the API figures from the pollers' report.
func latencies(r *Result, rep pollReport) {
	r.APISlowest = slowest(rep, 10)
	workers, jobs, base := rep.Workers.MS, rep.Jobs.MS, rep.Healthz.MS
	sortFloats(workers)
	sortFloats(jobs)
	sortFloats(base)
	r.APIPollErrors = rep.Workers.Errors + rep.Jobs.Errors + rep.Healthz.Errors
	r.WorkersP99MS, r.JobsP99MS = benchout.Quantile(workers, 0.99), benchout.Quantile(jobs, 0.99)
	r.BaselineP99MS = benchout.Quantile(base, 0.99)
	all := append(slices.Clone(workers), jobs...)
	sortFloats(all)
	r.APIPolls = len(all)
	r.APIP99MS, r.APIP50MS = benchout.Quantile(all, 0.99), benchout.Quantile(all, 0.5)
}

// wait long-polls the job until it is terminal, riding through a server
// restart, and says how it goes every few seconds.
func (e *env) wait(ctx context.Context, id string, start time.Time) (api.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	u := e.base + "/v1/jobs/" + url.PathEscape(id) + "/wait?timeout=5s&units=0"
	for {
		var j api.Job
		err := e.getJSON(ctx, u, &j)
		switch {
		case err == nil && j.Terminal():
			return j, nil
		case err == nil:
			fmt.Fprintf(e.cfg.Log, "scale: %v: %d of %d units done, %d running, %d associations\n", time.Since(start).Round(time.Second),
				j.Progress.Done, j.Progress.Total, j.Progress.Running, e.f.assocs.Load())
		case ctx.Err() != nil:
			return j, fmt.Errorf("scale: job %s not finished after %v", id, e.cfg.Timeout)
		default:
			if err := sleep(ctx, 200*time.Millisecond); err != nil { // the server restarting
				return j, err
			}
		}
	}
}

// restartAt kills the server once the job has the fraction cfg.Restart of
// its units done, and starts it again on the same data directory.
func (e *env) restartAt(ctx context.Context, id string, r *Result) {
	target := int(e.cfg.Restart * float64(e.cfg.Units))
	for ctx.Err() == nil {
		if p, err := e.progress(ctx, id); err == nil && p.Done >= target {
			fmt.Fprintf(e.cfg.Log, "scale: %d units done: killing the server (SIGKILL) and starting it again\n", p.Done)
			e.sp.kill()
			r.Restarted = true
			if err := e.sp.start(ctx); err != nil {
				fmt.Fprintf(e.cfg.Log, "scale: restart failed: %v\n", err)
			}
			return
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
}

// progress is job id's progress, as the first page of the jobs list shows
// it: a job's own status also counts its units by worker, a map as large
// as the fleet that would cost the server and this process, which shares
// its cores, more than the progress is worth at every look.
func (e *env) progress(ctx context.Context, id string) (api.Progress, error) {
	var page []api.Job
	if err := e.getJSON(ctx, e.base+"/v1/jobs?limit=1000", &page); err != nil {
		return api.Progress{}, err
	}
	for _, j := range page {
		if j.ID == id {
			return j.Progress, nil
		}
	}
	var j api.Job // not on the first page: a data directory with many jobs
	err := e.getJSON(ctx, e.base+"/v1/jobs/"+url.PathEscape(id)+"?units=0", &j)
	return j.Progress, err
}

// getJSON GETs base-relative url with the admin token and decodes it.
func (e *env) getJSON(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("scale: GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

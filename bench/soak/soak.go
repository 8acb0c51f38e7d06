// Package soak feeds a braid server jobs for a long time and watches its
// memory and state database: the instrument behind `braid bench soak`.
//
// Run starts a cluster in this process (package cluster: real HTTP, real
// associations, real files) whose server keeps few finished jobs
// (Config.RetainJobs) and collects unreferenced objects quickly
// (Config.GCGrace). It submits jobs at a steady rate, cycling through three
// kinds — repeat jobs that run to the end, big repeat jobs cancelled at once
// (the kind that used to take a server to gigabytes), and tiled jobs — and
// samples, every Config.Every and at the end, the process's resident memory
// (VmRSS after a forced GC that returns freed memory to the system), the Go
// heap, the size of state.db and of the object store.
//
// The figures are for the whole process: server, workers and the
// submitter. They are trusted for trends (a plateau against growth), not as
// the server's footprint alone. Linux only (VmRSS comes from
// /proc/self/status).
package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// Config describes a soak run. Zero values mean the documented defaults.
type Config struct {
	// Duration is how long jobs are submitted (default 1 minute).
	Duration time.Duration
	// Jobs, if positive, ends the submitting once that many jobs were
	// submitted, if Duration has not ended it before: a run as long as its
	// work, however fast the machine.
	Jobs int
	// Rate is the jobs submitted per second (default 10).
	Rate float64
	// Units is the number of units of a repeat job (default 20); a big
	// cancelled job has BigUnits (default 100,000).
	Units, BigUnits int
	// Every is the sampling period (default 10s).
	Every time.Duration
	// RetainJobs, RetainFor and GCGrace are the server's (defaults 50, 1
	// minute, 5 seconds): short, so that retention and collection work
	// during the run.
	RetainJobs int
	RetainFor  time.Duration
	GCGrace    time.Duration
	// Workers and Threads size the cluster (default 2 workers × 2 threads);
	// Transport is theirs (default tcpn).
	Workers, Threads int
	Transport        string
	// MaxOutstanding bounds the jobs submitted and not yet finished; the
	// submitter waits for room (default 64), so a slow cluster lowers the
	// rate instead of piling jobs up.
	MaxOutstanding int
	// DataDir is the server's data directory (default: a temporary one,
	// removed at the end).
	DataDir string
	// OnSample, if set, is called with each sample as it is taken.
	OnSample func(Sample)
	// Logger receives the cluster's logs (default: discard).
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = time.Minute
	}
	if c.Rate <= 0 {
		c.Rate = 10
	}
	if c.Units <= 0 {
		c.Units = 20
	}
	if c.BigUnits <= 0 {
		c.BigUnits = 100_000
	}
	if c.Every <= 0 {
		c.Every = 10 * time.Second
	}
	if c.RetainJobs == 0 {
		c.RetainJobs = 50
	}
	if c.RetainFor == 0 {
		c.RetainFor = time.Minute
	}
	if c.GCGrace == 0 {
		c.GCGrace = 5 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.Threads <= 0 {
		c.Threads = 2
	}
	if c.Transport == "" {
		c.Transport = "tcpn"
	}
	if c.MaxOutstanding <= 0 {
		c.MaxOutstanding = 64
	}
}

// Sample is one look at the process.
type Sample struct {
	Elapsed      time.Duration `json:"elapsed_ns"`
	RSSBytes     int64         `json:"rss_bytes"`
	HeapBytes    uint64        `json:"heap_bytes"`
	StateDBBytes int64         `json:"state_db_bytes"`
	StoreBytes   int64         `json:"store_bytes"`
	Objects      int           `json:"objects"`
	Jobs         int           `json:"jobs"` // jobs the server holds (retained and unfinished)
	Submitted    int           `json:"submitted"`
	Failed       int           `json:"failed"` // jobs that ended failed, or submits refused
}

// String is the sample as one line of text.
func (s Sample) String() string {
	return fmt.Sprintf("t=%-6s rss=%6.1fMiB heap=%6.1fMiB state.db=%6.2fMiB store=%6.2fMiB objects=%-5d jobs=%-5d submitted=%-6d failed=%d",
		s.Elapsed.Round(time.Second), mib(s.RSSBytes), mib(int64(s.HeapBytes)), mib(s.StateDBBytes),
		mib(s.StoreBytes), s.Objects, s.Jobs, s.Submitted, s.Failed)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// Result is a run's samples, oldest first; the last is taken at the end.
type Result struct {
	Config  Config   `json:"-"`
	Samples []Sample `json:"samples"`
}

// Run soaks a cluster for cfg.Duration and returns the samples.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Config: cfg}
	dir := cfg.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "braid-soak-*")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	specs := make([]cluster.WorkerSpec, cfg.Workers)
	for i := range specs {
		specs[i] = cluster.WorkerSpec{Threads: cfg.Threads, Transport: cfg.Transport}
	}
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Workers: specs, Logger: cfg.Logger,
		RetainJobs: cfg.RetainJobs, RetainFor: cfg.RetainFor, GCGrace: cfg.GCGrace})
	if err != nil {
		return res, err
	}
	defer cl.Close()
	f := &feeder{c: cl.Client, cfg: cfg, room: make(chan struct{}, cfg.MaxOutstanding)}
	if err := f.upload(ctx); err != nil {
		return res, err
	}
	err = f.run(ctx, dir, &res)
	f.wg.Wait()
	return res, err
}

// feeder submits the jobs and samples the process.
type feeder struct {
	c    *client.Client
	cfg  Config
	room chan struct{} // one token per outstanding job
	wg   sync.WaitGroup
	in   struct{ gif, png string }

	mu        sync.Mutex // guards the counters
	submitted int
	failed    int
}

func (f *feeder) upload(ctx context.Context) error {
	gif, err := f.c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		return err
	}
	png, err := f.c.Put(ctx, bytes.NewReader(samples.PNG()))
	f.in.gif, f.in.png = gif.ID, png.ID
	return err
}

// run submits at the configured rate and samples until the duration is
// over or Jobs were submitted, then waits for the jobs and takes a last
// sample.
func (f *feeder) run(ctx context.Context, dir string, res *Result) error {
	start := time.Now()
	end := time.NewTimer(f.cfg.Duration)
	defer end.Stop()
	submit := time.NewTicker(time.Duration(float64(time.Second) / f.cfg.Rate))
	defer submit.Stop()
	sample := time.NewTicker(f.cfg.Every)
	defer sample.Stop()
	for n := 0; ; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end.C:
			f.wg.Wait()
			return f.sample(ctx, dir, start, res)
		case <-sample.C:
			if err := f.sample(ctx, dir, start, res); err != nil {
				return err
			}
		case <-submit.C:
			if f.cfg.Jobs > 0 && n >= f.cfg.Jobs {
				f.wg.Wait()
				return f.sample(ctx, dir, start, res)
			}
			select {
			case f.room <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
			f.submitNext(ctx, n)
			n++
		}
	}
}

// submitNext submits the n-th job of the mix: three repeat jobs, one big
// job cancelled at once, one tiled job, and again.
func (f *feeder) submitNext(ctx context.Context, n int) {
	spec := api.JobSpec{Op: "noop", Input: f.in.gif, Repeat: f.cfg.Units}
	cancelIt := false
	switch n % 5 {
	case 3:
		spec.Repeat, cancelIt = f.cfg.BigUnits, true
	case 4:
		spec = api.JobSpec{Op: "grayscale", Input: f.in.png, Tiles: "2x2"}
	}
	f.wg.Go(func() {
		defer func() { <-f.room }()
		ok := f.runJob(ctx, spec, cancelIt)
		f.mu.Lock()
		f.submitted++
		if !ok {
			f.failed++
		}
		f.mu.Unlock()
	})
}

// runJob submits spec and waits for it to finish (or cancels it).
func (f *feeder) runJob(ctx context.Context, spec api.JobSpec, cancelIt bool) bool {
	j, err := f.c.Submit(ctx, spec)
	if err != nil {
		return false
	}
	if cancelIt {
		_, err := f.c.Cancel(ctx, j.ID)
		return err == nil
	}
	j, err = f.c.Wait(ctx, j.ID, nil)
	return err == nil && j.State == api.JobDone
}

// sample records how the process stands now.
func (f *feeder) sample(ctx context.Context, dir string, start time.Time, res *Result) error {
	debug.FreeOSMemory() // a GC, and freed memory back to the system
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := Sample{Elapsed: time.Since(start), HeapBytes: ms.HeapAlloc}
	var err error
	if s.RSSBytes, err = rss(); err != nil {
		return err
	}
	if fi, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
		s.StateDBBytes = fi.Size()
	}
	s.Objects, s.StoreBytes = dirUsage(filepath.Join(dir, "store", "objects"))
	if jobs, err := f.c.Jobs(ctx); err == nil {
		s.Jobs = len(jobs)
	}
	f.mu.Lock()
	s.Submitted, s.Failed = f.submitted, f.failed
	f.mu.Unlock()
	res.Samples = append(res.Samples, s)
	if f.cfg.OnSample != nil {
		f.cfg.OnSample(s)
	}
	return nil
}

// rss reads this process's resident set size from /proc/self/status.
func rss() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("soak: reading VmRSS: %w", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("soak: no VmRSS in /proc/self/status")
}

// dirUsage counts the files under dir and their bytes.
func dirUsage(dir string) (files int, size int64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			files++
			size += fi.Size()
		}
		return nil
	})
	return files, size
}

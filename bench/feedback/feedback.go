// Package feedback is the engine behind `braid bench feedback`: receiver
// feedback (seed 003) measured. A worker that cannot keep up, held to a
// CPU quota, runs a job of large images, once bounded by unit windows
// alone and once by byte budgets (the worker's --hold and the server's
// ByteHorizon). Each run reports the job's time, the worker process's
// peak memory and the most input bytes the server had in flight to it.
//
// Each run is a fresh cluster: a server in this process and one worker
// process (Config.Exe's worker command) in a cgroup with a CPU quota
// (package cpucg: cgroup v1, root).
package feedback

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/cpucg"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/server"
)

// Config describes the benchmark. Zero values mean the defaults given.
type Config struct {
	// Exe is the braid binary to run the worker with. Required.
	Exe string
	// Units is the job's size, a repeat job on one input (default 24).
	Units int
	// Op is the job's operation (default "blur"); for noop the input is
	// random bytes as large as the image.
	Op string
	// Pixels: the input is an image of Pixels×Pixels pixels of noise, a
	// PNG of about 3×Pixels² bytes (default 1536).
	Pixels int
	// Threads are the worker's (default 2); CPUs its CPU quota in CPUs,
	// at least cpucg.MinQuota (which zero gives).
	Threads int
	CPUs    float64
	// Window is the server's units in flight per stream (default 16).
	Window int
	// Transport is the data plane's (default braid's default).
	Transport string
	// Modes run in order: "windows" (no byte budgets: the worker's hold
	// -1, no ByteHorizon) and "bytes" (the defaults, with ByteHorizon).
	// Default both.
	Modes []string
	// ByteHorizon is the server's Config.ByteHorizon in the bytes mode.
	ByteHorizon time.Duration
	// Log gets a line before each run (default: discarded).
	Log io.Writer
}

// Result is one run; sizes are in bytes.
type Result struct {
	Mode          string  `json:"mode"`
	Seconds       float64 `json:"seconds"`
	UnitsPerSec   float64 `json:"units_per_sec"`
	WorkerPeakRSS int64   `json:"worker_peak_rss"`
	InFlightPeak  int64   `json:"in_flight_peak"`
}

func (c Config) withDefaults() (Config, error) {
	setDefault(&c.Units, 24)
	setDefault(&c.Pixels, 1536)
	setDefault(&c.Threads, 2)
	setDefault(&c.Window, 16)
	if c.Op == "" {
		c.Op = "blur"
	}
	if c.Transport == "" {
		c.Transport = transports.Default
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{"windows", "bytes"}
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Exe == "":
		return c, errors.New("bench feedback: no braid binary")
	case c.Pixels < 16 || c.Window > server.MaxWindow:
		return c, fmt.Errorf("bench feedback: want Pixels ≥ 16 and Window up to %d", server.MaxWindow)
	}
	for _, mode := range c.Modes {
		if mode != "windows" && mode != "bytes" {
			return c, fmt.Errorf("bench feedback: unknown mode %q (want windows or bytes)", mode)
		}
	}
	return c, nil
}

func setDefault(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

// Run runs the job once per mode and returns the results in order.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := cpucg.Available(); err != nil {
		return nil, fmt.Errorf("bench feedback: the slow worker needs a CPU quota: %w", err)
	}
	img := noisePNG(cfg.Pixels)
	if cfg.Op == "noop" {
		_, _ = rand.Read(img)
	}
	fmt.Fprintf(cfg.Log, "input: %d bytes (%d×%d noise); %d units of %s; worker: %d threads, %.2f CPU; window %d per stream; %s\n",
		len(img), cfg.Pixels, cfg.Pixels, cfg.Units, cfg.Op, cfg.Threads, cfg.CPUs, cfg.Window, cfg.Transport)
	var all []Result
	for _, mode := range cfg.Modes {
		fmt.Fprintf(cfg.Log, "running %s...\n", mode)
		r, err := run(ctx, cfg, mode, img)
		if err != nil {
			return all, err
		}
		r.Mode, r.UnitsPerSec = mode, float64(cfg.Units)/r.Seconds
		all = append(all, r)
	}
	return all, nil
}

// WriteTable writes rs as a table, a row per mode.
func WriteTable(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tseconds\tunits/s\tworker peak RSS MiB\tmost in flight MiB\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.0f\t%.0f\t\n", r.Mode, r.Seconds, r.UnitsPerSec,
			mib(r.WorkerPeakRSS), mib(r.InFlightPeak))
	}
	return tw.Flush()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// noisePNG is an n×n PNG of random pixels, which does not compress.
func noisePNG(n int) []byte {
	m := image.NewNRGBA(image.Rect(0, 0, n, n))
	_, _ = rand.Read(m.Pix)
	for i := 3; i < len(m.Pix); i += 4 {
		m.Pix[i] = 255
	}
	var b bytes.Buffer
	_ = (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&b, m)
	return b.Bytes()
}

// run runs the job once in a fresh cluster: this process's server, one
// worker process in a cgroup with a CPU quota.
func run(ctx context.Context, cfg Config, mode string, img []byte) (res Result, err error) {
	dir, err := os.MkdirTemp("", "braid-feedback-*")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	raw := make([]byte, 24)
	_, _ = rand.Read(raw)
	secret := []byte(hex.EncodeToString(raw)) // a secret file's content is the secret
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, secret, 0o600); err != nil {
		return res, err
	}
	ts, err := transports.All(transports.Options{})
	if err != nil {
		return res, err
	}
	horizon, hold := cfg.ByteHorizon, "0"
	if mode == "windows" {
		horizon, hold = -1, "-1"
	}
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), Secret: secret,
		Transports: ts, Window: cfg.Window, ByteHorizon: horizon})
	if err != nil {
		return res, err
	}
	sctx, stopServer := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx) }()
	defer func() {
		stopServer()
		if e := <-served; e != nil && !errors.Is(e, context.Canceled) && !errors.Is(e, server.ErrServerClosed) && err == nil {
			err = e
		}
	}()
	cl := client.New(srv.URL())
	cmd := exec.Command(cfg.Exe, "worker", "--server", srv.URL(), "--name", "slow", "--threads", strconv.Itoa(cfg.Threads),
		"--transport", cfg.Transport, "--secret-file", secretFile, "--hold", hold, "--log-level", "warn")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, "worker.log"))
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return res, err
	}
	g, err := cpucg.New("feedback", cfg.CPUs)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return res, err
	}
	defer func() { // the worker first: a cgroup with a process cannot be removed
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = g.Remove()
	}()
	if err := g.Add(cmd.Process.Pid); err != nil {
		return res, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = cluster.WaitUp(wctx, cl, 1, nil)
	cancel()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "worker.log"))
		return res, fmt.Errorf("bench feedback: worker not up: %w; it said: %s", err, log)
	}
	obj, err := cl.Put(ctx, bytes.NewReader(img))
	if err != nil {
		return res, err
	}
	// Sample the worker's RSS and the bytes in flight while the job runs
	// (the fields are the sampler's until it has stopped).
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			rss := procStatusKB(cmd.Process.Pid, "VmRSS") << 10
			bctx, cancel := context.WithTimeout(ctx, time.Second)
			inFlight, _ := srv.WorkerBytes(bctx, "slow")
			cancel()
			res.WorkerPeakRSS = max(res.WorkerPeakRSS, rss)
			res.InFlightPeak = max(res.InFlightPeak, inFlight)
			select {
			case <-sampling:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	job, err := cl.Submit(ctx, api.JobSpec{Op: cfg.Op, Input: obj.ID, Repeat: cfg.Units})
	if err == nil {
		job, err = cl.Wait(ctx, job.ID, nil)
	}
	res.Seconds = time.Since(start).Seconds()
	close(sampling)
	<-sampled
	if err != nil {
		return res, err
	}
	if job.State != api.JobDone {
		return res, fmt.Errorf("bench feedback: the job ended %s: %s", job.State, job.Error)
	}
	res.WorkerPeakRSS = max(res.WorkerPeakRSS, procStatusKB(cmd.Process.Pid, "VmHWM")<<10)
	return res, nil
}

// procStatusKB reads a kB field of /proc/PID/status, 0 if it cannot.
func procStatusKB(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

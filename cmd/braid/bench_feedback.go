package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/png"
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

// runBenchFeedback measures receiver feedback (seed 003): a worker that
// cannot keep up, held to a CPU quota, runs a job of large images, once
// bounded by unit windows alone and once by byte budgets (--hold and
// --byte-horizon). It reports the job's time, the worker process's peak
// memory and the most input bytes the server had in flight to it.
func runBenchFeedback(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("braid bench feedback", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	units := fs.Int("units", 24, "units in the job (a repeat job on one input)")
	op := fs.String("op", "blur", "the job's operation; for noop the input is random bytes as large as the image")
	pixels := fs.Int("pixels", 1536, "the input is an image of `N`×N pixels of noise, a PNG of about 3×N² bytes")
	threads := fs.Int("threads", 2, "the worker's threads")
	cpus := fs.Float64("cpus", 0.5, "the worker's CPU quota, in CPUs (cgroup v1; root)")
	window := fs.Int("window", 16, "the server's units in flight per stream")
	tname := fs.String("transport", transports.Default, "data-plane transport")
	modes := fs.String("modes", "windows,bytes", "comma-separated: windows (no byte budgets: --hold -1, --byte-horizon 0), bytes (the defaults)")
	horizon := fs.Duration("byte-horizon", time.Second, "the server's --byte-horizon in the bytes mode")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *units < 1 || *pixels < 16 || *threads < 1 || *window < 1 || *window > server.MaxWindow {
		return fmt.Errorf("bench feedback: want --units ≥ 1, --pixels ≥ 16, --threads ≥ 1 and --window 1 to %d", server.MaxWindow)
	}
	if err := cpucg.Available(); err != nil {
		return fmt.Errorf("bench feedback: the slow worker needs a CPU quota: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	img := noisePNG(*pixels)
	if *op == "noop" {
		_, _ = rand.Read(img)
	}
	fmt.Fprintf(e.stderr, "input: %d bytes (%d×%d noise); %d units of %s; worker: %d threads, %.2f CPU; window %d per stream; %s\n",
		len(img), *pixels, *pixels, *units, *op, *threads, *cpus, *window, *tname)
	tw := tabwriter.NewWriter(e.stdout, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tseconds\tunits/s\tworker peak RSS MiB\tmost in flight MiB\t")
	var all []feedbackResult
	for _, mode := range strings.Split(*modes, ",") {
		if mode != "windows" && mode != "bytes" {
			return fmt.Errorf("bench feedback: unknown mode %q (want windows or bytes)", mode)
		}
		fmt.Fprintf(e.stderr, "running %s...\n", mode)
		r, err := feedbackRun(ctx, exe, mode, *op, img, *units, *threads, *cpus, *window, *tname, *horizon)
		if err != nil {
			return err
		}
		r.Mode, r.UnitsPerSec = mode, float64(*units)/r.Seconds
		all = append(all, r)
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.0f\t%.0f\t\n", mode, r.Seconds, r.UnitsPerSec,
			mib(r.WorkerPeakRSS), mib(r.InFlightPeak))
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
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

// feedbackResult is one run of bench feedback; sizes are in bytes.
type feedbackResult struct {
	Mode          string  `json:"mode"`
	Seconds       float64 `json:"seconds"`
	UnitsPerSec   float64 `json:"units_per_sec"`
	WorkerPeakRSS int64   `json:"worker_peak_rss"`
	InFlightPeak  int64   `json:"in_flight_peak"`
}

// feedbackRun runs the job once in a fresh cluster: this process's server,
// one worker process in a cgroup with a CPU quota.
func feedbackRun(ctx context.Context, exe, mode, op string, img []byte, units, threads int, cpus float64, window int, tname string, byteHorizon time.Duration) (res feedbackResult, err error) {
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
	horizon, hold := byteHorizonConfig(byteHorizon), "0"
	if mode == "windows" {
		horizon, hold = -1, "-1"
	}
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: filepath.Join(dir, "data"), Secret: secret,
		Transports: ts, Window: window, ByteHorizon: horizon})
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
	cmd := exec.Command(exe, "worker", "--server", srv.URL(), "--name", "slow", "--threads", strconv.Itoa(threads),
		"--transport", tname, "--secret-file", secretFile, "--hold", hold, "--log-level", "warn")
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
	g, err := cpucg.New("feedback", cpus)
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
	job, err := cl.Submit(ctx, api.JobSpec{Op: op, Input: obj.ID, Repeat: units})
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

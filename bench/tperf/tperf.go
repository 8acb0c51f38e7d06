// Package tperf is the engine behind `braid bench transport`: a throughput
// and request/response test for any transport.Transport, in the spirit of
// psock's testperf and iperf3.
//
// One side listens, the other connects; both may run in one process. The
// connecting side drives the test. On every stream it first sends a mode
// message ("bulk" or "rr"), then for Config.Duration either streams
// Size-byte messages (bulk; the listener counts them) or sends Size-byte
// requests that the listener echoes (rr; one in flight per stream). An empty
// message ends a stream's run; the listener answers it with the byte count it
// received, so bulk rates are measured at the receiver.
//
// Mode "hol" (head of line) measures whether streams are independent in
// latency: stream 0 streams Size-byte bulk messages (default 64 MiB) while
// stream 1 sends 100-byte requests the listener echoes, one at a time; the
// result carries the round trips' latency percentiles. A transport whose
// small messages wait behind bulk data shows it as a high p99.
//
// RunSweep runs the command's matrix of transports, modes and stream
// counts; with a Net, each test runs as two processes across the emulated
// WAN (package netem).
package tperf

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/braidhq/braid/transport"
)

// Config describes one test.
type Config struct {
	Transport transport.Transport
	// Listen and Connect are the addresses of the two roles. With only
	// Listen, Run serves one association and reports what it received;
	// with only Connect it drives the test against a remote listener; with
	// neither, both run in this process on 127.0.0.1:0.
	Listen, Connect string
	// Streams is the stream count (default 1); Size the message size
	// (default 64 KiB).
	Streams int
	Size    int
	// Mode is "bulk" (default), "rr" or "hol".
	Mode string
	// Duration of the measured run (default 10 s).
	Duration time.Duration
	// File, if set, is read for the payload on the connecting side
	// (successive Size-byte chunks, wrapping at the end) and written with
	// what a listen-only side receives.
	File string
	// Samples, if set, is where the listening side records the bytes it
	// has received every SampleEvery, from the association's start to its
	// end (read it with ReadSamples): the rate over any part of the run.
	Samples string
	// Secret is the cluster secret (default: a fixed test secret, fine
	// for loopback).
	Secret []byte
	// Ready, if set, is called with the listening address once a
	// listen-only side listens (another process may then connect).
	Ready func(addr string)
}

// Result is one test's outcome. Bytes counts payload bytes: received by
// the listener in bulk mode, both directions in rr mode. CPU seconds are
// this process's (both sides when run in one process).
type Result struct {
	Transport   string  `json:"transport"`
	Streams     int     `json:"streams"`
	Size        int     `json:"size"`
	Mode        string  `json:"mode"`
	Seconds     float64 `json:"seconds"`
	Bytes       int64   `json:"bytes"`
	Messages    int64   `json:"messages"`
	Gbps        float64 `json:"gbps"`
	MsgPerSec   float64 `json:"msg_per_sec"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	CPUSecPerGB float64 `json:"cpu_sec_per_gb"`
	// LinkUserSeconds and LinkSysSeconds are, through an emulated network
	// (Net), the emulator's process's user and system CPU time over the
	// test. Its system time holds, besides its own reads and writes of the
	// TUN devices, the kernel's receive processing of every packet it
	// writes into the two namespaces, which runs inline in its write: for
	// kernel TCP most of the stack (the segments' receipt and the ACKs it
	// sends, the ACKs' receipt and the segments they clock out), which on
	// a host runs in softirq, where no process's time counts it either;
	// for a UDP transport the datagrams' receipt up to the socket's queue.
	// docs/experiments/sctp-cpu/host separates the two with perf.
	LinkUserSeconds float64 `json:"link_user_seconds,omitempty"`
	LinkSysSeconds  float64 `json:"link_sys_seconds,omitempty"`
	// Latency of the small round trips in mode hol, in milliseconds.
	LatencyP50 float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99 float64 `json:"latency_p99_ms,omitempty"`
	LatencyMax float64 `json:"latency_max_ms,omitempty"`
}

// ErrConfig is returned for an invalid Config.
var ErrConfig = errors.New("tperf: invalid config")

func (c Config) withDefaults() (Config, error) {
	if c.Streams <= 0 {
		c.Streams = 1
	}
	if c.Mode == "" {
		c.Mode = "bulk"
	}
	if c.Size <= 0 {
		c.Size = 64 << 10
		if c.Mode == "hol" {
			c.Size = 64 << 20
		}
	}
	if c.Mode == "hol" {
		c.Streams = max(c.Streams, 2)
	}
	if c.Duration <= 0 {
		c.Duration = 10 * time.Second
	}
	if len(c.Secret) == 0 {
		c.Secret = []byte("braid tperf")
	}
	switch {
	case c.Transport == nil:
		return c, fmt.Errorf("%w: no transport", ErrConfig)
	case c.Mode != "bulk" && c.Mode != "rr" && c.Mode != "hol":
		return c, fmt.Errorf("%w: mode %q (want bulk, rr or hol)", ErrConfig, c.Mode)
	case c.Size > transport.MaxMessageSize:
		return c, fmt.Errorf("%w: size %d over %d", ErrConfig, c.Size, transport.MaxMessageSize)
	case c.Streams > transport.MaxStreams:
		return c, fmt.Errorf("%w: %d streams over %d", ErrConfig, c.Streams, transport.MaxStreams)
	}
	return c, nil
}

// Run runs one test; see Config for the roles.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	switch {
	case cfg.Listen != "" && cfg.Connect == "":
		return serveOne(ctx, cfg)
	case cfg.Connect != "" && cfg.Listen == "":
		return measure(ctx, cfg, func() (Result, error) { return drive(ctx, cfg, cfg.Connect) })
	case cfg.Connect == "" && cfg.Listen == "":
		return inProcess(ctx, cfg)
	}
	return Result{}, fmt.Errorf("%w: set Listen or Connect, not both", ErrConfig)
}

// inProcess runs both roles on loopback.
func inProcess(ctx context.Context, cfg Config) (Result, error) {
	ln, err := cfg.Transport.Listen("127.0.0.1:0", listenConfig(cfg))
	if err != nil {
		return Result{}, err
	}
	defer ln.Close()
	srv := make(chan error, 1)
	go func() {
		_, err := serve(ctx, cfg, ln)
		srv <- err
	}()
	res, err := measure(ctx, cfg, func() (Result, error) { return drive(ctx, cfg, ln.Addr().String()) })
	if err != nil {
		ln.Close() // the listener may still wait for an association that never came
	}
	if serr := <-srv; err == nil && serr != nil {
		err = fmt.Errorf("tperf: listener: %w", serr)
	}
	return res, err
}

// measure runs f and fills in the CPU time and the rates.
func measure(_ context.Context, cfg Config, f func() (Result, error)) (Result, error) {
	before := CPUSeconds()
	res, err := f()
	res.CPUSeconds = CPUSeconds() - before
	res.fill(cfg)
	return res, err
}

func (r *Result) fill(cfg Config) {
	r.Transport, r.Streams, r.Size, r.Mode = cfg.Transport.Name(), cfg.Streams, cfg.Size, cfg.Mode
	if r.Seconds > 0 {
		r.Gbps = float64(r.Bytes) * 8 / r.Seconds / 1e9
		r.MsgPerSec = float64(r.Messages) / r.Seconds
	}
	if r.Bytes > 0 {
		r.CPUSecPerGB = r.CPUSeconds / (float64(r.Bytes) / 1e9)
	}
}

// CPUSeconds is this process's user plus system time.
func CPUSeconds() float64 {
	user, sys := cpuTimes()
	return user + sys
}

// cpuTimes is this process's user and system time, in seconds.
func cpuTimes() (user, sys float64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime), tv(ru.Stime)
}

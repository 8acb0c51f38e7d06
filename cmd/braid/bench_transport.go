package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// runBenchTransport measures transports the way psock's testperf and iperf3
// do: one-way bulk throughput or request/response rate, per transport and
// stream count, memory to memory or file to file.
func runBenchTransport(ctx context.Context, args []string, e *env) error {
	fs := newFlagSet("bench transport", "[--transport LIST] [--streams LIST] [--mode bulk,rr,hol] [--listen ADDR | --connect ADDR | --net SPEC]", e)
	tlist := fs.String("transport", strings.Join(transports.Names, ","), "transports, comma-separated; NAME+tls (sctp+tls, tcp+tls, tcpn+tls, ptcp+tls) forces data-plane\nencryption (on loopback it is off by default), e.g. --transport tcpn,tcpn+tls compares the two in one run")
	slist := fs.String("streams", "1,4", "stream counts, comma-separated")
	mlist := fs.String("mode", "bulk,rr", "bulk (one-way throughput), rr (request/response rate), hol (latency of 100-byte round trips on stream 1 beside bulk on stream 0)")
	size := fs.Int("size", 0, "message size in bytes (default: 64 KiB for bulk, 19 KiB for rr, 64 MiB for hol's bulk stream)")
	dur := fs.Duration("duration", 5*time.Second, "measured time per test")
	listen := fs.String("listen", "", "serve one test on ADDR (the other side runs --connect)")
	connect := fs.String("connect", "", "drive a test against a --listen side at ADDR")
	file := fs.String("file", "", "send this file's bytes (connect side) / write what arrives to it (listen side)")
	jsonOut := fs.String("json-out", "", "also write the results as JSON to this file")
	samples := fs.String("samples", "", "with --listen, record the bytes received every 100 ms to this file (CSV: unix_ns,bytes), for rates over part of the run")
	netPath := fs.Int("net-path", 0, "with --net, the path (0-based) the two sides talk over")
	netWait := fs.Duration("net-wait", 0, "with --net, how long to wait for a test bed that another process holds (the bed is one per machine)\nto go, rather than failing at once")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to FILE (for 'go tool pprof'); with --net, each side of each test writes FILE.listen and FILE.connect (the last test's stay)")
	netSpec := fs.String("net", "", "run the two sides in network namespaces joined by an emulated link (root, Linux), e.g.\n\"rtt=20ms,loss=0.5%,rate=100M,cc=reno\"; see 'braid net -h' for the spec")
	var sec secretFlags
	var topts transports.Options
	sec.register(fs)
	registerTransportFlags(fs, &topts)
	if err := parse(fs, args); err != nil {
		return err
	}
	secret, err := sec.value(e)
	if err != nil {
		return err
	}
	streams, err := intList(*slist)
	if err != nil {
		return fmt.Errorf("--streams: %w", err)
	}
	if *samples != "" && *listen == "" {
		return usageErrorf("--samples is the --listen side's")
	}
	if *cpuProfile != "" && *netSpec == "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	sweep := tperf.Sweep{Transports: strings.Split(*tlist, ","), Modes: strings.Split(*mlist, ","), Streams: streams,
		Size: *size, Duration: *dur, Listen: *listen, Connect: *connect, File: *file, Secret: secret, Samples: *samples, Options: topts, Log: e.stderr}
	if *netSpec != "" {
		if *listen != "" || *connect != "" || *file != "" || *samples != "" {
			return usageErrorf("--net runs both sides: no --listen, --connect, --file or --samples with it")
		}
		spec, err := netem.Parse(*netSpec)
		if err != nil {
			return usageErrorf("--net: %v", err)
		}
		if *netWait < 0 {
			return usageErrorf("--net-wait %s: want a duration of zero or more", *netWait)
		}
		if *netPath < 0 || *netPath >= len(spec.Paths) {
			return usageErrorf("--net-path %d: the spec has paths 0 to %d", *netPath, len(spec.Paths)-1)
		}
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		nb, err := tperf.NewNet(tperf.NetConfig{Spec: spec, Path: *netPath, Exe: exe, Size: *size, Duration: *dur,
			Options: topts, Secret: secret, CPUProfile: *cpuProfile, Wait: *netWait, Log: e.stderr})
		if err != nil {
			return err
		}
		defer nb.Close()
		sweep.Net = nb
	}
	results, err := tperf.RunSweep(ctx, sweep)
	if err != nil {
		return err
	}
	if err := tperf.WriteTable(e.stdout, results); err != nil {
		return err
	}
	if *jsonOut == "" {
		return nil
	}
	f, err := os.Create(*jsonOut)
	if err != nil {
		return err
	}
	if err := tperf.WriteJSON(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/braidhq/braid/bench/tperf"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// netBench runs `bench transport` tests through an emulated network: this
// process runs the emulator, and each test is a listen-side child process
// in braid-a and a connect-side child in braid-b, both this binary in its
// --listen and --connect modes.
type netBench struct {
	bed    *netem.Bed
	exe    string
	dir    string   // where the children write their JSON
	common []string // flags every child gets
	// cpuProfile, if set, is where the children write their CPU profiles
	// (with .listen and .connect added).
	cpuProfile string
	env        []string
	e          *env
	port       int
	path       int // the path the sides talk over
	// routes are a ptcp connect side's --ptcp-routes: braid-a's
	// addresses on the paths but the one the sides talk over, when the
	// spec has several (or what --ptcp-routes said).
	routes []string
	mptcp  bool // --mptcp
}

// firstNetPort is the listen port of the first test; each test takes the
// next, so that no test meets the last one's leftovers.
const firstNetPort = 47100

func newNetBench(spec string, path int, common []string, topts transports.Options, secret []byte, e *env) (*netBench, error) {
	s, err := netem.Parse(spec)
	if err != nil {
		return nil, usageErrorf("--net: %v", err)
	}
	if path < 0 || path >= len(s.Paths) {
		return nil, usageErrorf("--net-path %d: the spec has paths 0 to %d", path, len(s.Paths)-1)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "braid-netbench-")
	if err != nil {
		return nil, err
	}
	bed, err := netem.Up(s, netem.Options{})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	nb := &netBench{bed: bed, exe: exe, dir: dir, common: common, e: e, port: firstNetPort, env: os.Environ(), path: path,
		routes: topts.PTCP.Routes, mptcp: topts.MPTCP}
	if nb.routes == nil && len(s.Paths) > 1 {
		for i := 1; i < len(s.Paths); i++ {
			a, _ := netem.PathAddrs((path + i) % len(s.Paths))
			nb.routes = append(nb.routes, a.String())
		}
	}
	if secret != nil {
		nb.env = append(nb.env, "BRAID_SECRET="+string(secret))
	}
	for _, p := range bed.Paths() {
		fmt.Fprintf(e.stderr, "net: path %d %s (%s) ↔ %s (%s): a→b %s; b→a %s\n",
			p.Index, p.AddrA, netem.NSA, p.AddrB, netem.NSB, p.AB, p.BA)
	}
	return nb, nil
}

// Close stops the emulator and removes the namespaces.
func (nb *netBench) Close() error {
	os.RemoveAll(nb.dir)
	return nb.bed.Close()
}

// run runs one test: the listener in braid-a on the chosen path, the
// driver in braid-b. The result is the driver's (rates measured at the receiver),
// with the CPU seconds of both sides.
func (nb *netBench) run(ctx context.Context, tname, mode string, streams int, dur time.Duration) (tperf.Result, error) {
	nb.port++
	addrA, _ := netem.PathAddrs(nb.path)
	addr := net.JoinHostPort(addrA.String(), strconv.Itoa(nb.port))
	args := append([]string{"bench", "transport", "--transport", tname, "--mode", mode,
		"--streams", strconv.Itoa(streams)}, nb.common...)
	lout := filepath.Join(nb.dir, fmt.Sprintf("listen-%d.json", nb.port))
	cout := filepath.Join(nb.dir, fmt.Sprintf("connect-%d.json", nb.port))

	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	laddr := addr
	ptcp := strings.HasPrefix(tname, "ptcp") && nb.routes != nil
	if ptcp {
		args = append(args, "--ptcp-routes", strings.Join(nb.routes, ","))
	}
	if ptcp || nb.mptcp && len(nb.bed.Paths()) > 1 {
		// Over several paths: the listener takes connections (ptcp's
		// stripes, MPTCP's subflows) on all of braid-a's addresses.
		laddr = net.JoinHostPort("0.0.0.0", strconv.Itoa(nb.port))
	}
	largs := slices.Concat(args, []string{"--listen", laddr, "--json-out", lout})
	cargs := slices.Concat(args, []string{"--connect", addr, "--json-out", cout})
	if nb.cpuProfile != "" {
		largs = append(largs, "--cpuprofile", nb.cpuProfile+".listen")
		cargs = append(cargs, "--cpuprofile", nb.cpuProfile+".connect")
	}
	lcmd := netem.Command(lctx, netem.NSA, nb.exe, largs...)
	ready, lerr, err := nb.start(lcmd, "listen")
	if err != nil {
		return tperf.Result{}, err
	}
	select {
	case <-ready:
	case err := <-lerr:
		return tperf.Result{}, fmt.Errorf("listen side exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		return tperf.Result{}, fmt.Errorf("listen side did not listen within 30 s")
	case <-ctx.Done():
		return tperf.Result{}, ctx.Err()
	}
	before, cpu0 := nb.bed.Stats(), selfCPU()
	cctx, ccancel := context.WithTimeout(ctx, dur+2*time.Minute)
	defer ccancel()
	ccmd := netem.Command(cctx, netem.NSB, nb.exe, cargs...)
	_, cerr, err := nb.start(ccmd, "connect")
	if err != nil {
		return tperf.Result{}, err
	}
	if err := <-cerr; err != nil {
		return tperf.Result{}, fmt.Errorf("connect side: %w", err)
	}
	select {
	case err = <-lerr:
	case <-time.After(15 * time.Second):
		lcancel()
		err = fmt.Errorf("did not end 15 s after the connect side: %w", <-lerr)
	}
	if err != nil {
		return tperf.Result{}, fmt.Errorf("listen side: %w", err)
	}
	logPathStats(nb.e, before, nb.bed.Stats())
	// The emulator runs in this process, and the kernel's receive work for
	// the packets it writes into the namespaces (TCP's included, in
	// softirq) is charged to it, not to the two ends.
	fmt.Fprintf(nb.e.stderr, "  link: the emulator's process spent %.2f CPU s (the kernel's receive processing of what it forwards included)\n",
		selfCPU()-cpu0)
	return combine(cout, lout)
}

// selfCPU is this process's CPU seconds, user and system.
func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// start starts cmd, forwarding its stderr (but for the progress lines) to
// ours. ready is closed when it says it listens; done gets its exit.
func (nb *netBench) start(cmd *exec.Cmd, role string) (<-chan struct{}, <-chan error, error) {
	cmd.Env = nb.env
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("%s side: %w", role, err)
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "listening on ") && !said:
				said = true
				close(ready)
			case strings.HasPrefix(line, "measuring "):
			default:
				fmt.Fprintf(nb.e.stderr, "  [%s] %s\n", role, line)
			}
		}
		done <- cmd.Wait()
	}()
	return ready, done, nil
}

// logPathStats prints what the emulator did between two readings.
func logPathStats(e *env, before, after []netem.PathStats) {
	d := func(a, b netem.DirStats) string {
		s := fmt.Sprintf("%d packets, %d lost, %d queue drops, %d emulator drops",
			b.InPackets-a.InPackets, b.LostRandom+b.LostBurst-a.LostRandom-a.LostBurst,
			b.DroppedQueue-a.DroppedQueue, b.DroppedOverflow-a.DroppedOverflow)
		if cut := b.DroppedCut - a.DroppedCut; cut > 0 {
			s += fmt.Sprintf(", %d dropped by the cut", cut)
		}
		return s
	}
	for i := range after {
		fmt.Fprintf(e.stderr, "  net path %d: a→b %s; b→a %s\n", i, d(before[i].AB, after[i].AB), d(before[i].BA, after[i].BA))
	}
}

// combine reads the two sides' JSON results: the driver's, with the CPU
// seconds of both.
func combine(connectJSON, listenJSON string) (tperf.Result, error) {
	read := func(p string) (tperf.Result, error) {
		var rs []tperf.Result
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &rs)
		}
		if err == nil && len(rs) != 1 {
			err = fmt.Errorf("%d results, want 1", len(rs))
		}
		if err != nil {
			return tperf.Result{}, fmt.Errorf("result %s: %w", filepath.Base(p), err)
		}
		return rs[0], nil
	}
	c, err := read(connectJSON)
	if err != nil {
		return c, err
	}
	l, err := read(listenJSON)
	if err != nil {
		return c, err
	}
	c.CPUSeconds += l.CPUSeconds
	if c.Bytes > 0 {
		c.CPUSecPerGB = c.CPUSeconds / (float64(c.Bytes) / 1e9)
	}
	return c, nil
}

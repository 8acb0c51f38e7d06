package tperf

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// Net runs tests through an emulated network (`braid bench transport
// --net`): this process runs the emulator (package netem), and each test
// is a listen-side child process in braid-a and a connect-side child in
// braid-b, both the braid binary's `bench transport` in its --listen and
// --connect modes.
type Net struct {
	bed    *netem.Bed
	ownBed bool // NewNet brought the bed up, and Close takes it down
	exe    string
	dir    string   // where the children write their JSON
	common []string // flags every child gets
	// cpuProfile, if set, is where the children write their CPU profiles
	// (with .listen and .connect added).
	cpuProfile string
	env        []string
	log        io.Writer
	port       int
	path       int // the path the sides talk over
	dur        time.Duration
	// routes are a ptcp connect side's --ptcp-routes: braid-a's
	// addresses on the paths but the one the sides talk over, when the
	// spec has several (or what --ptcp-routes said).
	routes []string
	mptcp  bool // --mptcp
}

// NetConfig describes the bed and what every test's children are told.
type NetConfig struct {
	// Spec is the emulated network; Path the path (0-based) the two sides
	// talk over.
	Spec netem.Spec
	Path int
	// Bed, if set, is a running bed to use (its own spec, not Spec), which
	// Close leaves up; else NewNet brings up one of Spec.
	Bed *netem.Bed
	// Exe is the braid binary the children run.
	Exe string
	// Size (0: each mode's default) and Duration (default 10 s) are every
	// test's; Options tune the transports (passed on as their flags).
	Size     int
	Duration time.Duration
	Options  transports.Options
	// Wait is how long NewNet waits for a test bed that another process
	// holds to go (default: not at all; it fails with netem.ErrBusy).
	Wait time.Duration
	// Secret, if set, is given to the children in BRAID_SECRET.
	Secret []byte
	// CPUProfile, if set, is where each side of each test writes its CPU
	// profile, with .listen and .connect added (the last test's stay).
	CPUProfile string
	// Log gets the bed, what each test's link did, and the children's own
	// lines (default: discarded).
	Log io.Writer
}

// firstNetPort is the listen port of the first test; each test takes the
// next, so that no test meets the last one's leftovers.
const firstNetPort = 47100

// NewNet brings up the bed (root, Linux), unless given one.
func NewNet(cfg NetConfig) (*Net, error) {
	if cfg.Bed != nil {
		cfg.Spec = cfg.Bed.Spec()
	}
	if cfg.Path < 0 || cfg.Path >= len(cfg.Spec.Paths) {
		return nil, fmt.Errorf("%w: path %d: the spec has paths 0 to %d", ErrConfig, cfg.Path, len(cfg.Spec.Paths)-1)
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "braid-netbench-")
	if err != nil {
		return nil, err
	}
	bed := cfg.Bed
	if bed == nil {
		if bed, err = netem.Up(cfg.Spec, netem.Options{Wait: cfg.Wait}); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	common := append([]string{"--size", strconv.Itoa(cfg.Size), "--duration", cfg.Duration.String()}, cfg.Options.Args()...)
	nb := &Net{bed: bed, ownBed: cfg.Bed == nil, exe: cfg.Exe, dir: dir, common: common, log: cfg.Log, port: firstNetPort, env: os.Environ(), path: cfg.Path,
		dur: cfg.Duration, cpuProfile: cfg.CPUProfile, routes: cfg.Options.PTCP.Routes, mptcp: cfg.Options.MPTCP}
	paths := len(cfg.Spec.Paths)
	if nb.routes == nil && paths > 1 {
		for i := 1; i < paths; i++ {
			a, _ := netem.PathAddrs((cfg.Path + i) % paths)
			nb.routes = append(nb.routes, a.String())
		}
	}
	if cfg.Secret != nil {
		nb.env = append(nb.env, "BRAID_SECRET="+string(cfg.Secret))
	}
	for _, p := range bed.Paths() {
		fmt.Fprintf(nb.log, "net: path %d %s (%s) ↔ %s (%s): a→b %s; b→a %s\n",
			p.Index, p.AddrA, netem.NSA, p.AddrB, netem.NSB, p.AB, p.BA)
	}
	return nb, nil
}

// Close stops the emulator and removes the namespaces, if NewNet brought
// them up.
func (nb *Net) Close() error {
	os.RemoveAll(nb.dir)
	if !nb.ownBed {
		return nil
	}
	return nb.bed.Close()
}

// Test is one test of Start.
type Test struct {
	Transport, Mode string
	Streams         int
	// Args are flags both sides get after the Net's own, which they
	// override (the last of a flag wins), e.g. another --sctp-cc.
	Args []string
	// Samples: the listen side records what it receives as it goes
	// (Config.Samples; Running.Samples reads them).
	Samples bool
}

// Running is a test Start started. Wait must be called, once.
type Running struct {
	nb               *Net
	lcancel, ccancel context.CancelFunc
	lerr, cerr       <-chan error
	lout, cout       string
	samples          string
	before           []netem.PathStats
	user0, sys0      float64 // this process's (the emulator's) CPU times at the start
}

// Run runs one test: the listener in braid-a on the chosen path, the
// driver in braid-b. The result is the driver's (rates measured at the receiver),
// with the CPU seconds of both sides.
func (nb *Net) Run(ctx context.Context, tname, mode string, streams int) (Result, error) {
	r, err := nb.Start(ctx, Test{Transport: tname, Mode: mode, Streams: streams})
	if err != nil {
		return Result{}, err
	}
	return r.Wait()
}

// Start starts one test and returns once its driver runs: the listener in
// braid-a on the chosen path (each test on a port of its own), the driver
// in braid-b. Several tests may run at once over the bed; Start itself
// must not be called concurrently.
func (nb *Net) Start(ctx context.Context, t Test) (*Running, error) {
	nb.port++
	addrA, _ := netem.PathAddrs(nb.path)
	addr := net.JoinHostPort(addrA.String(), strconv.Itoa(nb.port))
	args := slices.Concat([]string{"bench", "transport", "--transport", t.Transport, "--mode", t.Mode,
		"--streams", strconv.Itoa(t.Streams)}, nb.common, t.Args)
	r := &Running{nb: nb, lout: filepath.Join(nb.dir, fmt.Sprintf("listen-%d.json", nb.port)),
		cout: filepath.Join(nb.dir, fmt.Sprintf("connect-%d.json", nb.port))}
	lctx, lcancel := context.WithCancel(ctx)
	laddr := addr
	ptcp := strings.HasPrefix(t.Transport, "ptcp") && nb.routes != nil
	if ptcp {
		args = append(args, "--ptcp-routes", strings.Join(nb.routes, ","))
	}
	if ptcp || nb.mptcp && len(nb.bed.Paths()) > 1 {
		// Over several paths: the listener takes connections (ptcp's
		// stripes, MPTCP's subflows) on all of braid-a's addresses.
		laddr = net.JoinHostPort("0.0.0.0", strconv.Itoa(nb.port))
	}
	largs := slices.Concat(args, []string{"--listen", laddr, "--json-out", r.lout})
	cargs := slices.Concat(args, []string{"--connect", addr, "--json-out", r.cout})
	if t.Samples {
		r.samples = filepath.Join(nb.dir, fmt.Sprintf("samples-%d.csv", nb.port))
		largs = append(largs, "--samples", r.samples)
	}
	if nb.cpuProfile != "" {
		largs = append(largs, "--cpuprofile", nb.cpuProfile+".listen")
		cargs = append(cargs, "--cpuprofile", nb.cpuProfile+".connect")
	}
	lcmd := netem.Command(lctx, netem.NSA, nb.exe, largs...)
	ready, lerr, err := nb.start(lcmd, "listen")
	if err != nil {
		lcancel()
		return nil, err
	}
	fail := func(err error) (*Running, error) {
		lcancel()
		<-lerr
		return nil, err
	}
	select {
	case <-ready:
	case err := <-lerr:
		lcancel()
		return nil, fmt.Errorf("listen side exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		return fail(fmt.Errorf("listen side did not listen within 30 s"))
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	r.before = nb.bed.Stats()
	r.user0, r.sys0 = cpuTimes()
	cctx, ccancel := context.WithTimeout(ctx, nb.dur+2*time.Minute)
	ccmd := netem.Command(cctx, netem.NSB, nb.exe, cargs...)
	_, cerr, err := nb.start(ccmd, "connect")
	if err != nil {
		ccancel()
		return fail(err)
	}
	r.lcancel, r.ccancel, r.lerr, r.cerr = lcancel, ccancel, lerr, cerr
	return r, nil
}

// Wait waits for the test to end and returns the driver's result with
// the CPU seconds of both sides.
func (r *Running) Wait() (Result, error) {
	defer r.lcancel()
	defer r.ccancel()
	if err := <-r.cerr; err != nil {
		r.lcancel()
		<-r.lerr
		return Result{}, fmt.Errorf("connect side: %w", err)
	}
	var err error
	select {
	case err = <-r.lerr:
	case <-time.After(15 * time.Second):
		r.lcancel()
		err = fmt.Errorf("did not end 15 s after the connect side: %w", <-r.lerr)
	}
	if err != nil {
		return Result{}, fmt.Errorf("listen side: %w", err)
	}
	nb := r.nb
	netem.WriteDelta(nb.log, r.before, nb.bed.Stats())
	// The emulator runs in this process, and the kernel's receive work for
	// the packets it writes into the namespaces (TCP's included) runs
	// inline in its writes, charged to it, not to the two ends: the result
	// carries its time beside theirs (Result.LinkSysSeconds).
	user, sys := cpuTimes()
	user, sys = user-r.user0, sys-r.sys0
	fmt.Fprintf(nb.log, "  link: the emulator's process spent %.2f CPU s, %.2f of them in the kernel (its receive processing of what it forwards included)\n",
		user+sys, sys)
	res, err := combine(r.cout, r.lout)
	res.LinkUserSeconds, res.LinkSysSeconds = user, sys
	return res, err
}

// Samples reads what the listen side recorded of a test started with
// Test.Samples (after Wait).
func (r *Running) Samples() ([]Sample, error) {
	if r.samples == "" {
		return nil, errors.New("tperf: the test recorded no samples")
	}
	return ReadSamples(r.samples)
}

// start starts cmd, forwarding its stderr (but for the progress lines) to
// ours. ready is closed when it says it listens; done gets its exit.
func (nb *Net) start(cmd *exec.Cmd, role string) (<-chan struct{}, <-chan error, error) {
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
				fmt.Fprintf(nb.log, "  [%s] %s\n", role, line)
			}
		}
		done <- cmd.Wait()
	}()
	return ready, done, nil
}

// combine reads the two sides' JSON results: the driver's, with the CPU
// seconds of both.
func combine(connectJSON, listenJSON string) (Result, error) {
	read := func(p string) (Result, error) {
		var rs []Result
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &rs)
		}
		if err == nil && len(rs) != 1 {
			err = fmt.Errorf("%d results, want 1", len(rs))
		}
		if err != nil {
			return Result{}, fmt.Errorf("result %s: %w", filepath.Base(p), err)
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

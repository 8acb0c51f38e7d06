package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
)

// netCluster runs the overhead benchmark's cluster through an emulated
// network: a `braid server` process in braid-a listening on path 0's
// address, the workers processes in braid-b reached by the server over the
// path; with several paths the workers take connections on all of their
// addresses and advertise the others as routes. This process submits the
// jobs through a connection it makes in braid-a, so that only the
// cluster's own traffic crosses the link: the server's data plane, and the
// workers' registration and heartbeats.
type netCluster struct {
	bed  *netem.Bed
	exe  string
	e    *env
	port int      // the server's for the next cluster; workers take the ones after
	cut  *pathCut // --cut, if given

	url   string       // the running cluster's server
	httpc *http.Client // reaches it from braid-a
}

func newNetCluster(spec string, e *env) (*netCluster, error) {
	s, err := netem.Parse(spec)
	if err != nil {
		return nil, usageErrorf("--net: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	bed, err := netem.Up(s, netem.Options{})
	if err != nil {
		return nil, err
	}
	p := bed.Paths()[0]
	fmt.Fprintf(e.stderr, "net: server in %s at %s, workers in %s at %s: a→b %s; b→a %s\n",
		netem.NSA, p.AddrA, netem.NSB, p.AddrB, p.AB, p.BA)
	return &netCluster{bed: bed, exe: exe, e: e, port: firstNetPort + 500}, nil
}

// Close stops the emulator and removes the namespaces.
func (nc *netCluster) Close() error { return nc.bed.Close() }

// start starts a server and nWorkers workers of transport tname, waits
// until every worker is up, and returns a client of the server and the
// func that stops it all.
func (nc *netCluster) start(ctx context.Context, tname string, topts transports.Options, nWorkers, threads, window int) (*client.Client, func(), error) {
	dir, err := os.MkdirTemp("", "braid-netjobs-")
	if err != nil {
		return nil, nil, err
	}
	pctx, cancel := context.WithCancel(context.Background())
	var procs []*exec.Cmd
	var dialer *nsDialer
	stop := func() {
		cancel() // SIGTERM, SIGKILL 3 s later (netem.Command)
		for i := len(procs) - 1; i >= 0; i-- {
			_ = procs[i].Wait()
		}
		if dialer != nil {
			dialer.close()
		}
		os.RemoveAll(dir)
	}
	fail := func(err error) (*client.Client, func(), error) {
		stop()
		return nil, nil, err
	}
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(hex.EncodeToString(secret)), 0o600); err != nil {
		return fail(err)
	}
	a, b := netem.PathAddrs(0)
	nc.port += 1 + nWorkers
	addr := net.JoinHostPort(a.String(), strconv.Itoa(nc.port))
	common := append(transportArgs(topts), "--secret-file", secretFile, "--log-level", "warn")
	args := append([]string{"server", "--listen", addr, "--data", filepath.Join(dir, "data"), "--auth=false",
		"--insecure-http", "--window", strconv.Itoa(window)}, common...)
	run := func(ns, name string, args []string) error {
		log, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return err
		}
		defer log.Close()
		cmd := netem.Command(pctx, ns, nc.exe, args...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		procs = append(procs, cmd)
		return nil
	}
	if err := run(netem.NSA, "server", args); err != nil {
		return fail(err)
	}
	url := "http://" + addr
	var routes []string // the workers' addresses on the other paths
	for _, p := range nc.bed.Paths()[1:] {
		routes = append(routes, p.AddrB.String())
	}
	for i := range nWorkers {
		name := "w" + strconv.Itoa(i+1)
		port := strconv.Itoa(nc.port + 1 + i)
		wargs := []string{"worker", "--server", url, "--name", name, "--transport", tname,
			"--threads", strconv.Itoa(threads), "--listen", net.JoinHostPort(b.String(), port)}
		if routes != nil {
			// Reachable on every path: ptcp spreads its connections over
			// them, MPTCP its subflows.
			wargs = append(wargs[:len(wargs)-1], net.JoinHostPort("0.0.0.0", port),
				"--advertise", net.JoinHostPort(b.String(), port), "--advertise-routes", strings.Join(routes, ","))
		}
		wargs = append(wargs, common...)
		if err := run(netem.NSB, name, wargs); err != nil {
			return fail(err)
		}
	}
	dialer = newNSDialer(netem.NSA)
	nc.url, nc.httpc = url, &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	cl := client.New(url).WithHTTPClient(nc.httpc)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = cluster.WaitUp(wctx, cl, nWorkers, nil)
	wcancel()
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return fail(fmt.Errorf("%w; the server said: %s", err, logs))
	}
	return cl, stop, nil
}

// nsDialer dials from a namespace, on one OS thread that joined it and
// lives until close. Not netem.InNS per dial: the thread it uses dies
// afterwards, and a child this process started from that thread would die
// with it (PR_SET_PDEATHSIG, which netem.Command sets, is per thread).
type nsDialer struct {
	reqs chan dialReq
	done chan struct{}
}

type dialReq struct {
	ctx           context.Context
	network, addr string
	res           chan<- dialRes
}

type dialRes struct {
	c   net.Conn
	err error
}

func newNSDialer(ns string) *nsDialer {
	d := &nsDialer{reqs: make(chan dialReq), done: make(chan struct{})}
	go func() {
		_ = netem.InNS(ns, func() error {
			for {
				select {
				case r := <-d.reqs:
					var nd net.Dialer
					c, err := nd.DialContext(r.ctx, r.network, r.addr)
					r.res <- dialRes{c, err}
				case <-d.done:
					return nil
				}
			}
		})
	}()
	return d
}

// DialContext is an http.Transport's.
func (d *nsDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	res := make(chan dialRes, 1)
	select {
	case d.reqs <- dialReq{ctx, network, addr, res}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := <-res
	return r.c, r.err
}

func (d *nsDialer) close() { close(d.done) }

// transportArgs are the command-line flags that give a child process
// topts.
func transportArgs(topts transports.Options) []string {
	return []string{"--sctp-stack", topts.SCTPStack, "--data-plane-tls", topts.DataPlaneTLS.String(),
		"--ptcp-stripes", countArg(topts.PTCP.RecStripes), "--ptcp-driver", topts.PTCP.Driver,
		"--sctp-flows", countArg(topts.SCTPFlows), "--sctp-pacing", onOff(!topts.SCTPUnpaced),
		"--sctp-hystart", onOff(!topts.SCTPNoHyStart), "--mptcp=" + strconv.FormatBool(topts.MPTCP)}
}

// onOff is the value of an on/off flag: "on" for true.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// countArg is --sctp-flows or --ptcp-stripes for n (0: auto).
func countArg(n int) string {
	if n == 0 {
		return "auto"
	}
	return strconv.Itoa(n)
}

// pathCut is --cut: a path black-holed a while into each run's job, until
// the job ends.
type pathCut struct {
	path  int
	after time.Duration
}

// parseCut reads --cut's PATH@DELAY for a bed of paths paths.
func parseCut(s string, paths int) (*pathCut, error) {
	p, d, ok := strings.Cut(s, "@")
	i, err := strconv.Atoi(p)
	after, derr := time.ParseDuration(d)
	switch {
	case !ok || err != nil || derr != nil || after < 0:
		return nil, usageErrorf("--cut %q: want PATH@DELAY, e.g. 1@2s", s)
	case paths < 2:
		return nil, usageErrorf("--cut needs a --net spec of two paths or more (\"…; …\")")
	case i < 1 || i >= paths:
		return nil, usageErrorf("--cut %d: path 0 carries the server's API, the heartbeats and every association's first connection; cut path 1 to %d", i, paths-1)
	}
	return &pathCut{path: i, after: after}, nil
}

// cutDuring cuts --cut's path its delay from now and returns the func to
// call when the job has ended: it lifts the cut and adds to r what the
// server counted meanwhile.
func (nc *netCluster) cutDuring(ctx context.Context, r *overheadResult) func() {
	before, berr := nc.serverCounts(ctx)
	if berr != nil {
		fmt.Fprintf(nc.e.stderr, "net: reading the server's metrics: %v\n", berr)
	}
	c := nc.cut
	var mu sync.Mutex // guards lifted and cut, so that a cut never outlives lift
	lifted, cut := false, false
	t := time.AfterFunc(c.after, func() {
		mu.Lock()
		defer mu.Unlock()
		if lifted {
			return
		}
		cut = true
		nc.bed.Cut(c.path, true)
		fmt.Fprintf(nc.e.stderr, "net: path %d cut %v into the job\n", c.path, c.after)
	})
	return func() {
		t.Stop()
		mu.Lock()
		lifted = true
		r.Cut, r.CutMissed = fmt.Sprintf("%d@%v", c.path, c.after), !cut
		mu.Unlock()
		nc.bed.Cut(c.path, false)
		if berr != nil {
			return // no counts to compare with
		}
		after, err := nc.serverCounts(ctx)
		if err != nil {
			fmt.Fprintf(nc.e.stderr, "net: reading the server's metrics: %v\n", err)
			return
		}
		r.Requeued = int(after[requeuedDown] - before[requeuedDown])
		r.AssocLost = int(after[assocLost] - before[assocLost])
		fmt.Fprintf(nc.e.stderr, "net: with path %d cut, the server took back %d units from workers whose association ended, and found %d associations silent\n",
			c.path, r.Requeued, r.AssocLost)
	}
}

// The server's counters that --cut reports.
const (
	requeuedDown = `braid_units_requeued_total{reason="worker_down"}`
	assocLost    = `braid_liveness_failures_total{check="association"}`
)

// serverCounts reads the running server's requeuedDown and assocLost.
func (nc *netCluster) serverCounts(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, nc.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := nc.httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if ok && (name == requeuedDown || name == assocLost) {
			out[name], _ = strconv.ParseFloat(v, 64)
		}
	}
	return out, sc.Err()
}

// Package netcluster runs a braid cluster as processes across the
// emulated WAN (package netem), for `braid bench overhead --net` and
// `braid bench net`: a `braid server` process in braid-a listening on path
// 0's address, the workers processes in braid-b reached by the server over
// the path; with several paths the workers take connections on all of
// their addresses and advertise the others as routes. This process submits
// the jobs through a connection it makes in braid-a, so that only the
// cluster's own traffic crosses the link: the server's data plane, and the
// workers' registration and heartbeats.
//
// The processes are the braid binary's server and worker commands
// (Cluster's exe); each gets its transport flags from
// transports.Options.Args. Up to one Cluster may exist at a time: it owns
// netem's namespaces.
package netcluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
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

// Cluster is the bed and the cluster that runs on it (one at a time).
type Cluster struct {
	bed  *netem.Bed
	exe  string
	log  io.Writer
	port int // the server's for the next cluster; workers take the ones after

	url   string       // the running cluster's server
	httpc *http.Client // reaches it from braid-a
}

// firstPort is the first cluster's server port; each cluster takes the
// ports after the last one's, so that none meets another's leftovers.
const firstPort = 47600

// New brings up the bed of spec (root, Linux). exe is the braid binary to
// run the server and the workers with; log gets a line per event worth
// knowing (the bed, a cut, what the server counted meanwhile).
func New(spec netem.Spec, exe string, log io.Writer) (*Cluster, error) {
	return NewWaiting(spec, exe, 0, log)
}

// NewWaiting is New, waiting up to wait for a bed another process holds
// to go (netem.Options.Wait): a long run that brings the bed up many
// times takes turns with the others that need it.
func NewWaiting(spec netem.Spec, exe string, wait time.Duration, log io.Writer) (*Cluster, error) {
	bed, err := netem.Up(spec, netem.Options{Wait: wait})
	if err != nil {
		return nil, err
	}
	p := bed.Paths()[0]
	fmt.Fprintf(log, "net: server in %s at %s, workers in %s at %s: a→b %s; b→a %s\n",
		netem.NSA, p.AddrA, netem.NSB, p.AddrB, p.AB, p.BA)
	return &Cluster{bed: bed, exe: exe, log: log, port: firstPort}, nil
}

// Bed is the emulated network the cluster runs on.
func (nc *Cluster) Bed() *netem.Bed { return nc.bed }

// Close stops the emulator and removes the namespaces.
func (nc *Cluster) Close() error { return nc.bed.Close() }

// Start starts a server and nWorkers workers of transport tname, waits
// until every worker is up, and returns a client of the server and the
// func that stops it all. Stop one cluster before starting the next.
func (nc *Cluster) Start(ctx context.Context, tname string, topts transports.Options, nWorkers, threads, window int) (*client.Client, func(), error) {
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
	common := append(topts.Args(), "--secret-file", secretFile, "--log-level", "warn")
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
// stays there until close.
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

// Cut is a path black-holed a while into a job (bench overhead's --cut).
type Cut struct {
	Path  int           // 1 to the bed's paths less one: path 0 carries the API and the heartbeats
	After time.Duration // from the job's submit
}

// CutReport is what a cut did: the path and delay, whether the job ended
// before the cut, and the server's count of units taken back from workers
// whose association ended, and of associations it found silent,
// meanwhile.
type CutReport struct {
	Cut       string
	Missed    bool
	Requeued  int
	AssocLost int
}

// CutDuring cuts c's path its delay from now and returns the func to call
// when the job has ended: it lifts the cut and reports what the server
// counted meanwhile.
func (nc *Cluster) CutDuring(ctx context.Context, c Cut) func() CutReport {
	before, berr := nc.serverCounts(ctx)
	if berr != nil {
		fmt.Fprintf(nc.log, "net: reading the server's metrics: %v\n", berr)
	}
	var mu sync.Mutex // guards lifted and cut, so that a cut never outlives lift
	lifted, cut := false, false
	t := time.AfterFunc(c.After, func() {
		mu.Lock()
		defer mu.Unlock()
		if lifted {
			return
		}
		cut = true
		nc.bed.Cut(c.Path, true)
		fmt.Fprintf(nc.log, "net: path %d cut %v into the job\n", c.Path, c.After)
	})
	return func() (r CutReport) {
		t.Stop()
		mu.Lock()
		lifted = true
		r.Cut, r.Missed = fmt.Sprintf("%d@%v", c.Path, c.After), !cut
		mu.Unlock()
		nc.bed.Cut(c.Path, false)
		if berr != nil {
			return r // no counts to compare with
		}
		after, err := nc.serverCounts(ctx)
		if err != nil {
			fmt.Fprintf(nc.log, "net: reading the server's metrics: %v\n", err)
			return r
		}
		r.Requeued = int(after[requeuedDown] - before[requeuedDown])
		r.AssocLost = int(after[assocLost] - before[assocLost])
		fmt.Fprintf(nc.log, "net: with path %d cut, the server took back %d units from workers whose association ended, and found %d associations silent\n",
			c.Path, r.Requeued, r.AssocLost)
		return r
	}
}

// The server's counters that CutDuring reports.
const (
	requeuedDown = `braid_units_requeued_total{reason="worker_down"}`
	assocLost    = `braid_liveness_failures_total{check="association"}`
)

// serverCounts reads the running server's requeuedDown and assocLost.
func (nc *Cluster) serverCounts(ctx context.Context) (map[string]float64, error) {
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

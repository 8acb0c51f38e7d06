package scale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/srcstat"
)

// braidBin is a braid binary the server runs as, built without the race
// detector so that it runs at its usual speed while the simulated
// workers, in this process, are checked for races.
var braidBin string

// TestSourcesStatted ties this package's cached result to the module's
// sources, which braidBin is built from (package srcstat).
func TestSourcesStatted(t *testing.T) { srcstat.Module(t, "../..") }

func TestMain(m *testing.M) {
	unchanged := srcstat.Watch("../..")
	dir, err := os.MkdirTemp("", "braid-scale-test-*")
	if err != nil {
		panic(err)
	}
	braidBin = filepath.Join(dir, "braid")
	if out, err := exec.Command("go", "build", "-o", braidBin, "../../cmd/braid").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building braid: %v\n%s", err, out)
		os.Exit(1)
	}
	code := unchanged(m.Run())
	os.RemoveAll(dir)
	os.Exit(code)
}

// tlog writes the bench's progress lines to the test log.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestShortRun is the short form of the scale bench: 200 simulated workers
// and a job of 20,000 units through a real server process, every unit
// answered and counted once, and every figure measured.
func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process and 200 simulated workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, Config{Exe: braidBin, Workers: 200, Units: 20_000, Log: tlog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if !r.OK() || r.Results < r.Units {
		t.Errorf("%d units done, %d counted, %d answered, %d results sent; want %d", r.Done, r.Counted, r.Answered, r.Results, r.Units)
	}
	for what, v := range map[string]float64{"register_s": r.RegisterS, "units_per_s": r.UnitsPerS, "api polls": float64(r.APIPolls), "baseline p99": r.BaselineP99MS,
		"server_cpu_s": r.ServerCPUS, "heartbeats_per_s": r.HeartbeatsPerS, "server RSS": float64(r.ServerRSSPeak),
		"server fds": float64(r.ServerFDs), "heap peak": float64(r.HeapPeakBytes)} {
		if v <= 0 {
			t.Errorf("%s = %v: not measured", what, v)
		}
	}
	if r.ServerFDs < r.Workers {
		t.Errorf("the server has %d files open at its peak, fewer than one connection per worker (%d)", r.ServerFDs, r.Workers)
	}
}

// TestRestartResumes kills the server with SIGKILL in the middle of the job
// and starts it again: the job resumes and finishes with every unit
// counted exactly once, and the simulated workers register again by
// themselves.
func TestRestartResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process and simulated workers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Run(ctx, Config{Exe: braidBin, Workers: 50, Units: 20_000, Restart: 0.4, Compute: 200 * time.Microsecond, Log: tlog{t}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Restarted {
		t.Fatal("the server was not restarted")
	}
	if !r.OK() {
		t.Errorf("%d units done, %d counted, %d answered; want %d each", r.Done, r.Counted, r.Answered, r.Units)
	}
}

// TestPortTakenAtStart: a port picked for the server and taken by another
// process before the server listens (here, held by the test) makes the
// first start pick other ports, not fail the run.
func TestPortTakenAtStart(t *testing.T) {
	dir := t.TempDir()
	p, err := newServerProc(braidBin, dir, "secret", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	p.setAddrs(taken.Addr().String(), p.debug)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.firstStart(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.stop(10 * time.Second)
	if p.api == taken.Addr().String() {
		t.Fatalf("the server answers at %s, the port the test holds", p.api)
	}
}

// TestServerNice starts the server at a nice value below the bench's: every
// thread of the server runs at it, those its runtime started after the
// fork included, and the bench's threads keep theirs.
func TestServerNice(t *testing.T) {
	const nice = -3
	p, err := newServerProc(braidBin, t.TempDir(), "secret", nil, nice)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.firstStart(ctx); errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		t.Skipf("no privilege to raise a priority: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	defer p.stop(10 * time.Second)
	for _, tid := range threads(t, p.pid()) {
		if got := threadNice(t, p.pid(), tid); got != nice {
			t.Errorf("server thread %s at nice %d, want %d", tid, got, nice)
		}
	}
	for _, tid := range threads(t, os.Getpid()) {
		if got := threadNice(t, os.Getpid(), tid); got != 0 {
			t.Errorf("bench thread %s at nice %d, want 0", tid, got)
		}
	}
}

// threads lists the thread ids of process pid.
func threads(t *testing.T, pid int) []string {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		ids = append(ids, e.Name())
	}
	return ids
}

// threadNice is thread tid's nice value (field 19 of its stat).
func threadNice(t *testing.T, pid int, tid string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, tid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // after the command's name
	n, err := strconv.Atoi(f[16])                                  // field 19: the fields after the name start at field 3
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPollProc runs the API's pollers in their own process at a nice value
// below the bench's, as Run does with the server's: the child's threads run
// at it, it polls the three paths with the token, and its latencies come
// back once it is told to stop.
func TestPollProc(t *testing.T) {
	const nice, token = -3, "tok"
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path != "/healthz" && r.URL.Query().Get("limit") != "7" {
			http.Error(w, "want limit=7", http.StatusBadRequest)
			return
		}
		w.Write([]byte("[]"))
	}))
	defer srv.Close()
	p, err := startPollProc(braidBin, PollSpec{Base: srv.URL, Token: token, Page: 7, Every: 10 * time.Millisecond}, nice)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		t.Skipf("no privilege to raise a priority: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	const want = 3
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		n := min(hits["/v1/workers"], hits["/v1/jobs"], hits["/healthz"])
		mu.Unlock()
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			p.finish()
			t.Fatalf("after a minute the pollers' process made %v requests; want %d of each path", hits, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, tid := range threads(t, p.cmd.Process.Pid) {
		if got := threadNice(t, p.cmd.Process.Pid, tid); got != nice {
			t.Errorf("poller thread %s at nice %d, want %d", tid, got, nice)
		}
	}
	rep, err := p.finish()
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]pollSeries{"workers": rep.Workers, "jobs": rep.Jobs, "healthz": rep.Healthz} {
		if len(s.MS) < want || s.Errors != 0 {
			t.Errorf("%s: %d latencies, %d errors; want at least %d and none", what, len(s.MS), s.Errors, want)
		}
		for _, ms := range s.MS {
			if ms <= 0 {
				t.Errorf("%s: latency %v ms", what, ms)
			}
		}
	}
	var r Result
	latencies(&r, rep)
	if r.APIPolls != len(rep.Workers.MS)+len(rep.Jobs.MS) || r.APIP99MS <= 0 || r.BaselineP99MS <= 0 {
		t.Errorf("figures from the report: %d polls, p99 %v ms, baseline p99 %v ms", r.APIPolls, r.APIP99MS, r.BaselineP99MS)
	}
	all := append(append(slices.Clone(rep.Workers.MS), rep.Jobs.MS...), rep.Healthz.MS...)
	if len(r.APISlowest) != min(10, len(all)) || r.APISlowest[0].MS != slices.Max(all) {
		t.Errorf("slowest polls %+v: want the ten slowest, slowest first", r.APISlowest)
	}
	for i, p := range r.APISlowest {
		if p.AtS < 0 || i > 0 && p.MS > r.APISlowest[i-1].MS {
			t.Errorf("slowest polls %+v: out of order or before the first poll", r.APISlowest)
		}
	}
}

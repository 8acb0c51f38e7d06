// Package e2e runs real braid processes — a server and workers started from
// the built binary — over loopback, and kills one with SIGKILL mid-job.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/srcstat"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

var braidBin string

func TestMain(m *testing.M) {
	unchanged := srcstat.Watch("..")
	dir, err := os.MkdirTemp("", "braid-e2e-*")
	if err != nil {
		panic(err)
	}
	braidBin = filepath.Join(dir, "braid")
	out, err := exec.Command("go", "build", "-o", braidBin, "../cmd/braid").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building braid: %v\n%s", err, out)
		os.Exit(1)
	}
	code := unchanged(m.Run())
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestSourcesStatted ties this package's cached result to the module's
// sources, which the binary it runs is built from (package srcstat). A run
// with -run that leaves it out may be reused after a change.
func TestSourcesStatted(t *testing.T) { srcstat.Module(t, "..") }

const secret = "e2e-secret"

// proc is a running braid process whose stderr is kept for the test log.
type proc struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	log bytes.Buffer
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(braidBin, args...)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Env = append(os.Environ(), "BRAID_SECRET="+secret)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", args[0], p.logText())
		}
	})
	return p
}

func (p *proc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// waitLog waits for a log line matching re and returns its first group.
func (p *proc) waitLog(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(p.logText()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log line matching %s; log:\n%s", re, p.logText())
	return ""
}

// adminTokens holds each test server's first admin token, by URL, for the
// client commands the tests run against it.
var adminTokens sync.Map

// connect waits for srv (data directory dir) to listen and returns a
// client that shows its first admin token.
func connect(t *testing.T, srv *proc, dir string) *client.Client {
	t.Helper()
	url := srv.waitLog(t, regexp.MustCompile(`msg="server listening" url=(\S+)`))
	tok, err := os.ReadFile(filepath.Join(dir, api.AdminTokenFile))
	if err != nil {
		t.Fatalf("the server's admin token: %v", err)
	}
	adminTokens.Store(url, strings.TrimSpace(string(tok)))
	return client.New(url).WithToken(string(tok))
}

// withToken gives a client command (args hold --server URL) the admin
// token of that server in $BRAID_TOKEN.
func withToken(cmd *exec.Cmd, args []string) {
	cmd.Env = os.Environ()
	for i, a := range args[:max(len(args)-1, 0)] {
		if a == "--server" {
			if tok, ok := adminTokens.Load(args[i+1]); ok {
				cmd.Env = append(cmd.Env, "BRAID_TOKEN="+tok.(string))
			}
		}
	}
}

func startServer(t *testing.T) (*proc, *client.Client) {
	t.Helper()
	return startServerAt(t, "127.0.0.1:0", t.TempDir())
}

// kill9 kills a process with SIGKILL and reaps it, so its ports are free.
func kill9(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func waitWorkersUp(t *testing.T, c *client.Client, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ws, _ := c.Workers(context.Background())
		if upCount(ws) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("fewer than %d workers up", n)
}

func TestKillWorkerMidJob(t *testing.T) {
	_, c := startServer(t)
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "steady")
	victim := start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "victim")
	waitWorkersUp(t, c, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	obj, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"sigma": "3"}
	const units = 120
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Params: params, Repeat: units, Policy: "dynamic"})
	if err != nil {
		t.Fatal(err)
	}
	// Kill the victim once it has done some work and holds units in flight.
	for {
		s, err := c.Job(ctx, j.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		victimDone := 0
		for _, u := range s.Units {
			if u.Worker == "victim" && u.State == "done" {
				victimDone++
			}
		}
		if victimDone >= 3 {
			break
		}
		if s.Terminal() {
			t.Fatalf("job finished before the victim did 3 units; make it longer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	killed := time.Now()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	final, err := c.Wait(ctx, j.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.JobDone || final.Progress.Done != units {
		t.Fatalf("after kill -9: state %s, progress %+v, error %q", final.State, final.Progress, final.Error)
	}
	total := 0
	for _, n := range final.UnitsPerWorker {
		total += n
	}
	if total != units {
		t.Errorf("units per worker %v sum to %d, want %d: a unit was counted twice or lost", final.UnitsPerWorker, total, units)
	}
	requeued := 0
	want, _ := ops.Run("blur", ops.Params(params), samples.PNG())
	sum := sha256.Sum256(want)
	wantID := hex.EncodeToString(sum[:])
	for _, u := range final.Units {
		if u.Attempts > 1 {
			requeued++
		}
		// A result the victim sent just before it died may reach the server
		// after the kill and is rightly credited; a unit sent to it after
		// its death cannot have been computed by it.
		if u.Worker == "victim" && u.Sent != nil && u.Sent.After(killed) {
			t.Errorf("unit %d was sent to the victim at %v, after its death at %v, yet credited to it", u.Index, u.Sent, killed)
		}
		if u.Output != wantID {
			t.Errorf("unit %d (worker %s): output %s, want %s (a local blur)", u.Index, u.Worker, u.Output, wantID)
		}
	}
	got, err := c.GetBytes(ctx, final.Units[units-1].Output)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("last unit's output differs from a local blur (err %v)", err)
	}
	if requeued == 0 {
		t.Errorf("no unit was requeued; the victim held none in flight?")
	}
	t.Logf("killed victim; %d units requeued; job finished %v after the kill; per worker %v",
		requeued, final.FinishedAt.Sub(killed).Round(time.Millisecond), final.UnitsPerWorker)
}

// TestCLI drives the client commands as a user would.
func TestCLI(t *testing.T) {
	srv, c := startServer(t)
	if log := srv.logText(); !strings.Contains(log, "wrote it to ") || !strings.Contains(log, "export BRAID_TOKEN=$(cat ") {
		t.Errorf("a new server's log does not say where its first admin token is:\n%s", log)
	}
	if code, _, stderr := runCLI(t, c, false, "jobs"); code != 1 || !strings.Contains(stderr, "needs a token") {
		t.Errorf("jobs without a token: exit %d, stderr %q", code, stderr)
	}
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "w1", "--transport", "tcp")
	waitWorkersUp(t, c, 1)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.gif")
	if err := os.WriteFile(in, samples.GIF(), 0o644); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(cli(t, c, "put", in))
	if len(id) != 64 {
		t.Fatalf("put printed %q, want an object id", id)
	}
	out := cli(t, c, "submit", "--op", "grayscale", "--input", id, "--wait", "--json")
	var j api.Job
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.State != api.JobDone {
		t.Fatalf("submit --wait --json: %v\n%s", err, out)
	}
	dst := filepath.Join(dir, "out.gif")
	cli(t, c, "get", j.Result, "-o", dst)
	got, _ := os.ReadFile(dst)
	want, _ := ops.Run("grayscale", nil, samples.GIF())
	if !bytes.Equal(got, want) {
		t.Errorf("downloaded result differs from a local grayscale")
	}
	byJob := filepath.Join(dir, "by-job.gif")
	cli(t, c, "get", "--job", j.ID, "-o", byJob)
	if got, _ := os.ReadFile(byJob); !bytes.Equal(got, want) {
		t.Errorf("get --job downloaded something else than the job's result")
	}
	if s := cli(t, c, "status", j.ID); !strings.Contains(s, "avg per unit") {
		t.Errorf("status lacks the paper's metric:\n%s", s)
	}
	if s := cli(t, c, "workers"); !strings.Contains(s, "w1") || !strings.Contains(s, "up") {
		t.Errorf("workers:\n%s", s)
	}
	cmd := exec.Command(braidBin, "submit", "--server", c.URL(), "--op", "nope", "--input", id)
	withToken(cmd, cmd.Args[1:])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "unknown operation") {
		t.Errorf("unknown op: err %v, stderr %q", err, stderr.String())
	}
}

func cli(t *testing.T, c *client.Client, args ...string) string {
	t.Helper()
	args = withServer(c, args)
	cmd := exec.Command(braidBin, args...)
	withToken(cmd, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, io.MultiWriter(&stderr)
	if err := cmd.Run(); err != nil {
		t.Fatalf("braid %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// TestPprof checks that --pprof serves the runtime's profiles on an
// address of its own, and that the API port does not.
func TestPprof(t *testing.T) {
	_, c := startServer(t)
	w := start(t, "worker", "--server", c.URL(), "--threads", "1", "--pprof", "127.0.0.1:0")
	url := w.waitLog(t, regexp.MustCompile(`msg="serving profiles" url=(\S+)`))
	resp, err := http.Get(url + "goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("GET %sgoroutine: %s\n%.300s", url, resp.Status, body)
	}
	resp, err = http.Get(c.URL() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("the API port serves /debug/pprof/")
	}
}

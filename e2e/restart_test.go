package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/internal/testport"
	"github.com/braidhq/braid/ops/samples"
)

// startServerAt starts a server on addr (port 0: any) with its state in
// dir, waits until it listens, and returns it with a client for it.
func startServerAt(t *testing.T, addr, dir string) (*proc, *client.Client) {
	t.Helper()
	srv := start(t, "server", "--listen", addr, "--data", dir, "--heartbeat-timeout", "2s")
	return srv, connect(t, srv, dir)
}

// background is a client command running on its own, its output kept.
type background struct {
	cmd            *exec.Cmd
	stdout, stderr testlog.Buffer
	done           chan error // receives Wait's error, and gets it back
}

func startCLI(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{cmd: exec.Command(braidBin, args...), done: make(chan error, 1)}
	withToken(b.cmd, args)
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		<-b.done
		b.done <- nil
	})
	return b
}

// exit waits up to d for the command to end and fails the test if it did
// not end well.
func (b *background) exit(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case err := <-b.done:
		b.done <- err
		if err != nil {
			t.Fatalf("braid %v: %v\nstdout:\n%s\nstderr:\n%s", b.cmd.Args[1:], err, &b.stdout, &b.stderr)
		}
	case <-time.After(d):
		t.Fatalf("braid %v still running after %v\nstderr:\n%s", b.cmd.Args[1:], d, &b.stderr)
	}
}

// TestWaitRidesThroughServerRestart starts `braid wait JOB` mid-job, kills
// the server with SIGKILL, and starts a new one on the same data directory
// and port: the waiting command must get the job's result, and a `braid
// status` started while the server was down must answer once it is back.
// The workers use tcpn, which reconnects to a restarted server.
func TestWaitRidesThroughServerRestart(t *testing.T) {
	addr, dir := testport.Addr(t), t.TempDir()
	url := "http://" + addr
	srv, c := startServerAt(t, addr, dir)
	for _, name := range []string{"w1", "w2"} {
		start(t, "worker", "--server", url, "--threads", "1", "--name", name, "--transport", "tcpn")
	}
	waitWorkersUp(t, c, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	obj, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	const units = 300
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Params: map[string]string{"sigma": "2"}, Repeat: units})
	if err != nil {
		t.Fatal(err)
	}
	wait := startCLI(t, "wait", "--server", url, "--json", j.ID)
	waitRunning(t, ctx, c, j.ID, time.Now().Add(time.Second))

	kill9(t, srv)
	status := startCLI(t, "status", "--server", url, j.ID)
	time.Sleep(time.Second)
	startServerAt(t, addr, dir)

	status.exit(t, 45*time.Second)
	if !strings.Contains(status.stdout.String(), j.ID) {
		t.Errorf("status printed no job:\n%s", &status.stdout)
	}
	wait.exit(t, 150*time.Second)
	var final api.Job
	if err := json.Unmarshal([]byte(wait.stdout.String()), &final); err != nil {
		t.Fatalf("wait --json printed %v:\n%s", err, &wait.stdout)
	}
	if final.State != api.JobDone || final.Progress.Done != units {
		t.Errorf("wait got state %s, progress %+v, error %q", final.State, final.Progress, final.Error)
	}
	for name, b := range map[string]*background{"wait": wait, "status": status} {
		// Once per outage, not once per attempt (a restarting server may
		// refuse a connection once more while it binds: a second outage).
		if n := strings.Count(b.stderr.String(), "unreachable"); n < 1 || n > 2 {
			t.Errorf("%s said %d times that the server is unreachable, want once per outage:\n%s", name, n, &b.stderr)
		}
	}
	t.Logf("wait's stderr: %s", strings.TrimSpace(wait.stderr.String()))
}

// waitRunning waits until the job has finished some units and not all of
// them, and it is at least notBefore.
func waitRunning(t *testing.T, ctx context.Context, c *client.Client, id string, notBefore time.Time) {
	t.Helper()
	for {
		j, err := c.Job(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		if j.Terminal() {
			t.Fatalf("job %s before the kill; make it longer", j.State)
		}
		if j.Progress.Done >= 5 && time.Now().After(notBefore) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

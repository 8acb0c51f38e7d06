package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/internal/testport"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
)

// TestAcceptedJobSurvivesKill: an id the server returned names a job on
// disk, however soon the server dies after answering; so does a cancel
// once it answered, and a job's done state once a client saw it.
func TestAcceptedJobSurvivesKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data := t.TempDir()
	srv, c := startServerAt(t, "127.0.0.1:0", data)
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		t.Fatal(err)
	}
	spec := api.JobSpec{Op: "grayscale", Input: obj.ID}
	for try := range 6 {
		j, err := c.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		kill9(t, srv)
		srv, c = startServerAt(t, "127.0.0.1:0", data)
		if got, err := c.Job(ctx, j.ID, false); err != nil || got.State != api.JobQueued {
			t.Errorf("try %d: job %s after kill -9 right after its 201: %+v, %v", try, j.ID, got.State, err)
		}
	}

	j, err := c.Submit(ctx, spec)
	if err == nil {
		_, err = c.Cancel(ctx, j.ID)
	}
	if err != nil {
		t.Fatal(err)
	}
	kill9(t, srv)
	srv, c = startServerAt(t, "127.0.0.1:0", data)
	if got, err := c.Job(ctx, j.ID, false); err != nil || got.State != api.JobCancelled {
		t.Errorf("cancelled job after kill -9 right after the cancel's 200: %s, %v", got.State, err)
	}

	start(t, "worker", "--server", c.URL(), "--threads", "1", "--name", "w", "--transport", "tcpn")
	waitWorkersUp(t, c, 1)
	j, err = c.Submit(ctx, api.JobSpec{Op: "grayscale", Input: obj.ID, Repeat: 3})
	if err == nil {
		j, err = c.Wait(ctx, j.ID, nil)
	}
	if err != nil || j.State != api.JobDone {
		t.Fatalf("job: %+v %v", j, err)
	}
	kill9(t, srv)
	_, c = startServerAt(t, "127.0.0.1:0", data)
	got, err := c.Job(ctx, j.ID, true)
	if err != nil || got.State != api.JobDone || got.Result != j.Result || len(got.Units) != 3 {
		t.Fatalf("done job after kill -9 right after a client saw it done: %+v, %v", got, err)
	}
	for _, u := range got.Units {
		if u.State != "done" || u.Output == "" || u.Worker != "w" {
			t.Errorf("unit %d after kill -9: %+v", u.Index, u)
		}
	}
}

// TestResumeAfterKill: a server killed mid-job, restarted on the same data
// directory, runs only the units without a stored result; the job's
// result lists one correct output per unit.
func TestResumeAfterKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	data, addr := t.TempDir(), testport.Addr(t)
	srv, c := startServerAt(t, addr, data)
	// tcpn: the worker sees the killed server's connections end at once
	// (noticing a silent peer on the UDP-based sctp is liveness work).
	w := start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "w", "--transport", "tcpn")
	waitWorkersUp(t, c, 1)
	obj, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"sigma": "3"}
	const units = 120
	no := false
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Params: params, Repeat: units, Speculate: &no})
	if err != nil {
		t.Fatal(err)
	}
	doneBefore := waitDone(t, ctx, c, j.ID, 30)
	// The worker is frozen so that the job is still running when the
	// server dies, however fast this machine is. The units that status
	// counted done are on disk already (a job's progress counts a unit
	// only once its record committed), so the kill can follow at once.
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	kill9(t, srv)
	killed := time.Now()
	_, c = startServerAt(t, addr, data) // the worker finds it again at the same address
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	final, err := c.Wait(ctx, j.ID, nil)
	if err == nil {
		final, err = c.Job(ctx, j.ID, true)
	}
	if err != nil || final.State != api.JobDone || final.Progress.Done != units {
		t.Fatalf("resumed job: %s %+v %q (%v)", final.State, final.Progress, final.Error, err)
	}
	want, _ := ops.Run("blur", ops.Params(params), samples.PNG())
	sum := sha256.Sum256(want)
	wantID := hex.EncodeToString(sum[:])
	rerun := 0
	for _, u := range final.Units {
		if u.Sent != nil && u.Sent.After(killed) {
			rerun++
		}
		if u.Output != wantID {
			t.Errorf("unit %d: output %s, want %s", u.Index, u.Output, wantID)
		}
	}
	if rerun > units-doneBefore || rerun == 0 {
		t.Errorf("%d units ran after the restart; %d were done before the kill, so at most %d should have",
			rerun, doneBefore, units-doneBefore)
	}
	b, err := c.GetBytes(ctx, final.Result)
	var m api.Manifest
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || len(m.Expand()) != units {
		t.Fatalf("manifest: %d units (%v)", len(m.Expand()), err)
	}
	for i, mu := range m.Expand() {
		if mu.Index != i || mu.Output != wantID {
			t.Errorf("manifest entry %d: %+v", i, mu)
		}
	}
	t.Logf("%d of %d units done before kill -9; %d ran after the restart", doneBefore, units, rerun)
}

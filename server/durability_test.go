package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/server"
)

var testSecret = []byte("braid-cluster-secret")

// running is a server started by runServer.
type running struct {
	srv     *server.Server
	c       *client.Client
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// runServer starts a server on cfg.DataDir (other fields default for
// tests) and stops it at cleanup if the test did not.
func runServer(t *testing.T, cfg server.Config) *running {
	t.Helper()
	ts, err := transports.All(transports.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen, cfg.Secret, cfg.Transports = "127.0.0.1:0", testSecret, ts
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, c: client.New(srv.URL()), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- srv.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels Run's context and waits for Run; it returns how long Run
// took to return.
func (r *running) stop(t *testing.T) time.Duration {
	t.Helper()
	if r.stopped {
		return 0
	}
	r.stopped = true
	start := time.Now()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("server Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("server did not stop within 30 s")
	}
	return time.Since(start)
}

// waitFor polls cond every 20 ms until it holds or ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// unitsByState counts a job's units by state.
func unitsByState(j api.Job) map[string]int {
	n := map[string]int{}
	for _, u := range j.Units {
		n[u.State]++
	}
	return n
}

// TestGracefulStopDrains: when Run's context ends, submits get 503, no
// new unit goes out, the results of the units in flight come back and
// are stored, and a restarted server has every one of them. The fake
// worker holds the units it gets until the stop has begun (a submit was
// refused): then what it holds is what was in flight, and the results it
// sends back free windows that a server still dispatching would fill.
func TestGracefulStopDrains(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	r := runServer(t, server.Config{DataDir: dir, DrainTimeout: 20 * time.Second})
	fw := startFakeWorker(t, r.c, testSecret, "fake", 2, 10*time.Millisecond)
	release := fw.hold()
	defer release()
	in := put(t, r.c, []byte("input"))
	no := false
	j, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 40, Speculate: &no})
	if err != nil {
		t.Fatal(err)
	}
	// A worker not yet measured is sent a unit per stream and one more.
	waitFor(ctx, t, "units in flight", func() bool { return len(fw.received()) >= 3 })

	stopped := make(chan time.Duration, 1)
	go func() { stopped <- r.stop(t) }()
	var code string
	once := r.c.WithRetry(client.Retry{For: -1}) // see the 503 itself, not a client riding it out
	waitFor(ctx, t, "a submit to be refused", func() bool {
		_, err := once.Submit(ctx, api.JobSpec{Op: "noop", Input: in})
		code = apiCode(err)
		return code != "" || err != nil
	})
	if code != api.CodeUnavailable {
		t.Errorf("submit while stopping: code %q, want %s", code, api.CodeUnavailable)
	}
	inFlight := len(fw.received())
	release()
	took := <-stopped
	got := fw.received()
	if len(got) != inFlight {
		t.Errorf("the worker was sent %d units after the stop began (it held %d then)", len(got)-inFlight, inFlight)
	}
	t.Logf("stopped in %v with %d units sent", took.Round(time.Millisecond), len(got))

	r2 := runServer(t, server.Config{DataDir: dir})
	after, err := r2.c.Job(ctx, j.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	if n := unitsByState(after)["done"]; n != len(got) {
		t.Errorf("after restart %d units are done, want all %d the worker was sent (their results came back during the drain)", n, len(got))
	}
	if after.Progress.Done != len(got) || after.Terminal() {
		t.Errorf("after restart: %s, progress %+v; want unfinished with %d done", after.State, after.Progress, len(got))
	}
}

// TestDrainIsBounded: a worker that never answers cannot hold the stop
// for longer than DrainTimeout; its units run again after a restart.
func TestDrainIsBounded(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	logs := &testlog.Buffer{}
	r := runServer(t, server.Config{DataDir: dir, DrainTimeout: 300 * time.Millisecond, Logger: logs.Logger(slog.LevelInfo)})
	fw := startFakeWorker(t, r.c, testSecret, "stuck", 1, time.Hour)
	in := put(t, r.c, []byte("input"))
	j, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 3})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "a unit in flight", func() bool { return len(fw.received()) >= 1 })
	r.stop(t) // fails if Run has not returned within 30 s; the worker would hold its unit for an hour
	// The stop ended by the configured timer, with the unit still out,
	// not by the default DrainTimeout (10 s) or by the unit coming back.
	if out := logs.String(); !strings.Contains(out, `msg="drain timed out; the units still in flight run again after the next start" timeout=300ms in_flight=`) ||
		strings.Contains(out, "in_flight=0") {
		t.Errorf("the stop did not end by the 300ms drain timeout with units in flight:\n%s", out)
	}
	fw.stop()
	r2 := runServer(t, server.Config{DataDir: dir})
	fw2 := startFakeWorker(t, r2.c, testSecret, "quick", 2, time.Millisecond)
	final, err := r2.c.Wait(ctx, j.ID, nil)
	if err != nil || final.State != api.JobDone {
		t.Fatalf("after restart: %+v %v", final, err)
	}
	if n := len(fw2.received()); n != 3 {
		t.Errorf("after restart %d units ran, want the 3 that never came back", n)
	}
}

// TestResumeRunsOnlyMissingUnits: a restarted server runs only the units
// without a stored result, and the result lists exactly one output per
// unit. (The e2e test does the same across kill -9.)
func TestResumeRunsOnlyMissingUnits(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	const units = 60
	r := runServer(t, server.Config{DataDir: dir, DrainTimeout: -1})
	fw := startFakeWorker(t, r.c, testSecret, "first", 1, 20*time.Millisecond)
	in := put(t, r.c, []byte("input"))
	no := false
	j, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: units, Speculate: &no})
	if err != nil {
		t.Fatal(err)
	}
	var done int // results stored durably before the stop
	waitFor(ctx, t, "some results stored", func() bool {
		s, err := r.c.Job(ctx, j.ID, false)
		done = s.Progress.Done
		return err == nil && done >= 15
	})
	r.stop(t) // no drain: units in flight are lost
	fw.stop()

	r2 := runServer(t, server.Config{DataDir: dir})
	before, err := r2.c.Job(ctx, j.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int]bool{}
	for _, u := range before.Units {
		if u.State == "done" {
			stored[u.Index] = true
		}
	}
	if len(stored) < done {
		t.Fatalf("%d results stored after the restart; %d were before the stop", len(stored), done)
	}
	fw2 := startFakeWorker(t, r2.c, testSecret, "second", 2, time.Millisecond)
	final, err := r2.c.Wait(ctx, j.ID, nil)
	if err != nil || final.State != api.JobDone {
		t.Fatalf("resumed job: %+v %v", final, err)
	}
	rerun := fw2.received()
	for _, u := range rerun {
		if stored[u.index] {
			t.Errorf("unit %d ran again though its result was stored", u.index)
		}
	}
	if len(rerun) != units-len(stored) {
		t.Errorf("%d units ran after the restart, want %d", len(rerun), units-len(stored))
	}
	checkManifest(t, r2.c, final)
}

// checkManifest checks a repeat job's manifest names exactly one output per
// unit, the fake worker's output for that unit.
func checkManifest(t *testing.T, c *client.Client, j api.Job) {
	t.Helper()
	var m api.Manifest
	b, err := c.GetBytes(testCtx(t), j.Result)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatalf("manifest %s: %v", j.Result, err)
	}
	units := m.Expand()
	if len(units) != j.Progress.Total {
		t.Fatalf("manifest lists %d units, job has %d", len(units), j.Progress.Total)
	}
	for i, mu := range units {
		got, err := c.GetBytes(testCtx(t), mu.Output)
		if mu.Index != i || err != nil || string(got) != string(fakeOutput(j.ID, i)) {
			t.Errorf("manifest unit %d: index %d output %q (%v)", i, mu.Index, got, err)
		}
	}
}

// TestIdentityAndEpoch: the server id is made once and kept; the epoch
// grows at every start, before the server serves.
func TestIdentityAndEpoch(t *testing.T) {
	dir := t.TempDir()
	var ids []string
	var epochs []uint64
	for range 3 {
		r := runServer(t, server.Config{DataDir: dir})
		ids, epochs = append(ids, r.srv.ID()), append(epochs, r.srv.Epoch())
		r.stop(t)
	}
	if len(ids[0]) != 32 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("server ids %q: want the same 32 hex digits every start", ids)
	}
	if !sort.SliceIsSorted(epochs, func(a, b int) bool { return epochs[a] < epochs[b] }) || epochs[0] < 1 ||
		epochs[1] == epochs[0] || epochs[2] == epochs[1] {
		t.Errorf("epochs %v: want strictly increasing from 1", epochs)
	}
	other := runServer(t, server.Config{DataDir: t.TempDir()})
	if other.srv.ID() == ids[0] {
		t.Errorf("two data directories share the server id %s", ids[0])
	}
}

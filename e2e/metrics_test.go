package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops/samples"
)

// sample reads one series from a /metrics page in the text format: the
// line "name{labels} value" or "name value". It returns -1 when the series
// is missing.
func sample(t *testing.T, url, series string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	adminTokens.Range(func(server, tok any) bool { // a server's /metrics needs a token
		if strings.HasPrefix(url, server.(string)+"/") {
			req.Header.Set("Authorization", "Bearer "+tok.(string))
		}
		return true
	})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s", url, err, resp.Status)
	}
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", url, line, err)
			}
			return v
		}
	}
	return -1
}

// TestMetricsFrozenWorker freezes a worker (SIGSTOP) mid-job and checks
// that the server's metrics count the liveness failures, on the
// association and then on the heartbeats, and the units taken back, and
// that every unit sent is accounted for.
func TestMetricsFrozenWorker(t *testing.T) {
	_, c := startServer(t) // heartbeat timeout 2 s
	start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "steady")
	frozen := start(t, "worker", "--server", c.URL(), "--threads", "2", "--name", "frozen",
		"--liveness", "500ms", "--metrics-addr", "127.0.0.1:0")
	workerURL := frozen.waitLog(t, regexp.MustCompile(`msg="serving metrics" url=(\S+)`))
	waitWorkersUp(t, c, 2)
	serverURL := c.URL() + "/metrics"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	obj, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	const units = 80
	no := false
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Params: map[string]string{"sigma": "3"},
		Repeat: units, Policy: "equal", Speculate: &no})
	if err != nil {
		t.Fatal(err)
	}
	ran := `braid_worker_units_run_total{outcome="done"}`
	for sample(t, workerURL, ran) < 3 {
		if s, err := c.Job(ctx, j.ID, false); err != nil || s.Terminal() {
			t.Fatalf("job ended (%v) before the frozen worker ran 3 units; make it longer", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := frozen.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = frozen.cmd.Process.Signal(syscall.SIGCONT) }()
	final, err := c.Wait(ctx, j.ID, nil)
	if err != nil || final.State != api.JobDone {
		t.Fatalf("job after the freeze: %v %+v", err, final)
	}

	got := func(series string) float64 { return sample(t, serverURL, series) }
	if v := got(`braid_liveness_failures_total{check="association"}`); v != 1 {
		t.Errorf("association liveness failures = %v, want 1", v)
	}
	requeued := got(`braid_units_requeued_total{reason="worker_down"}`)
	if requeued < 1 {
		t.Errorf("units requeued = %v; the frozen worker held none in flight?", requeued)
	}
	sent, done := got("braid_units_sent_total"), got(`braid_units_finished_total{outcome="done"}`)
	back := got(`braid_units_requeued_total{reason="handed_back"}`)
	if done != units || sent != done+requeued+back {
		t.Errorf("sent %v units; want the %d done + %v requeued + %v handed back", sent, units, requeued, back)
	}
	if v := got(`braid_worker_units_completed_total{worker="frozen"}`); v != float64(final.UnitsPerWorker["frozen"]) {
		t.Errorf("frozen worker completed %v units by the metrics, %d by the job", v, final.UnitsPerWorker["frozen"])
	}
	deadline := time.Now().Add(60 * time.Second)
	for got(`braid_liveness_failures_total{check="heartbeat"}`) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat liveness failure counted 60 s after the freeze (timeout 2 s)")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v := got(`braid_workers{state="down"}`); v != 1 {
		t.Errorf("workers down = %v, want 1 (the frozen one)", v)
	}
	t.Logf("sent %v units: %v done, %v requeued, %v handed back; per worker %v", sent, done, requeued, back, final.UnitsPerWorker)
}

// TestMetricsFrozenServer freezes the server (SIGSTOP) and checks that a
// worker counts the association it gives up on as a liveness failure.
func TestMetricsFrozenServer(t *testing.T) {
	srv, c := startServer(t)
	w := start(t, "worker", "--server", c.URL(), "--threads", "1", "--name", "w1",
		"--liveness", "500ms", "--metrics-addr", "127.0.0.1:0")
	workerURL := w.waitLog(t, regexp.MustCompile(`msg="serving metrics" url=(\S+)`))
	waitWorkersUp(t, c, 1)
	lost := "braid_worker_liveness_failures_total"
	if v := sample(t, workerURL, lost); v != 0 {
		t.Fatalf("%s = %v before the freeze", lost, v)
	}
	if v := sample(t, workerURL, "braid_worker_associations"); v != 1 {
		t.Fatalf("braid_worker_associations = %v with the worker up", v)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.cmd.Process.Signal(syscall.SIGCONT) }()
	deadline := time.Now().Add(60 * time.Second)
	for sample(t, workerURL, lost) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still 0 60 s after freezing the server (liveness 500 ms)", lost)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The transport releases the association's admission as it tears it
	// down, which may come a moment after the worker counted the loss.
	for v := sample(t, workerURL, "braid_worker_associations"); v != 0; v = sample(t, workerURL, "braid_worker_associations") {
		if time.Now().After(deadline) {
			t.Fatalf("braid_worker_associations = %v 60 s after freezing the server (liveness 500 ms)", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testport"
)

// TestLinkedWorkers runs linked workers as processes (docs/operations.md,
// "Heartbeats and linked workers"): the server's heartbeat timeout is
// 10 s, the association's liveness bound 500 ms and so its idle bound 5 s,
// which links the workers (over tcpn: a TCP transport, whose
// associations say their bounds). A linked worker sends no heartbeat for several
// intervals and stays up; a second process under its name is refused; a
// freeze past the idle bound ends its association, and once thawed it
// beats again before the timeout, never taken for dead; killed and
// started again it takes its name back at once; frozen for good, it is
// taken for dead within the heartbeat timeout of the freeze, as a worker
// that heartbeats is.
func TestLinkedWorkers(t *testing.T) {
	dir := t.TempDir()
	const timeout = 10 * time.Second
	srv := start(t, "server", "--listen", "127.0.0.1:0", "--data", dir, "--heartbeat-timeout", timeout.String(), "--liveness", "500ms")
	c := connect(t, srv, dir)
	metrics := c.URL() + "/metrics"
	worker := func() *proc {
		return start(t, "worker", "--server", c.URL(), "--threads", "1", "--name", "w1", "--liveness", "500ms", "--transport", "tcpn")
	}
	beats := func() float64 { return sample(t, metrics, "braid_heartbeats_total") }
	waitBeats := func(above float64, within time.Duration, what string) {
		t.Helper()
		deadline := time.Now().Add(within)
		for beats() <= above {
			if time.Now().After(deadline) {
				t.Fatalf("no heartbeat within %v %s", within, what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	w := worker()
	waitWorkersUp(t, c, 1)
	// The first heartbeat with the association up is answered with the
	// linked interval (30 s).
	waitBeats(beats(), 30*time.Second, "of a worker up")
	n := beats()
	time.Sleep(4 * time.Second) // a non-event: at the 1 s interval, four heartbeats
	if got := beats(); got != n {
		t.Fatalf("a linked worker sent %v heartbeats in 4 s; want none", got-n)
	}

	second := worker()
	second.waitLog(t, regexp.MustCompile(`msg="rejected by server"[^\n]*(in use)`))
	_ = second.cmd.Wait()

	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	srv.waitLog(t, regexp.MustCompile(`msg="association down"[^\n]*worker=w1[^\n]*(peer lost)`))
	n = beats()
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitBeats(n, timeout/2, "of a thawed worker whose association ended")
	waitWorkersUp(t, c, 1)
	if v := sample(t, metrics, `braid_liveness_failures_total{check="heartbeat"}`); v != 0 {
		t.Fatalf("%v heartbeat liveness failures; the thawed worker beat in time", v)
	}

	old := epochOf(t, c, "w1")
	kill9(t, w)
	asked := time.Now()
	w = worker()
	waitUp(t, c, "w1", old)
	if d := time.Since(asked); d > timeout {
		t.Errorf("the restarted worker took its name back in %v; want about two intervals (2 s)", d)
	}

	waitBeats(beats(), 30*time.Second, "of the restarted worker up")
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer func() { _ = w.cmd.Process.Signal(syscall.SIGCONT) }()
	deadline := frozen.Add(time.Minute)
	for sample(t, metrics, `braid_liveness_failures_total{check="heartbeat"}`) < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the frozen linked worker was not taken for dead within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The timeout counts from its last word on the association, not from
	// the association's end (5 s later): within the timeout of the freeze,
	// plus the scan's second and some slack.
	if d := time.Since(frozen); d > timeout+4*time.Second {
		t.Errorf("the frozen linked worker was taken for dead %v after the freeze; want within the heartbeat timeout (%v)", d, timeout)
	}
}

// epochOf is the epoch of the process that holds worker name's
// registration (0 if none does).
func epochOf(t *testing.T, c *client.Client, name string) uint64 {
	t.Helper()
	ws, err := c.Workers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Info.Name == name {
			return w.Info.Epoch
		}
	}
	return 0
}

// waitUp waits until worker name is up, registered by another process
// than epoch's.
func waitUp(t *testing.T, c *client.Client, name string, epoch uint64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ws, _ := c.Workers(context.Background())
		for _, w := range ws {
			if w.Info.Name == name && w.State == api.WorkerUp && w.Info.Epoch != epoch {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("worker %s not up under a new process", name)
}

// TestLinkedWorkerRestartsOnItsPort: a linked worker on a fixed --listen
// port, killed (kill -9) and started again on that port, gets its name
// back within the heartbeat timeout, and its old registration does not
// stay up. The server redials the old registration's address every
// second and reaches the new process before it registers (the test holds
// the registration until it has): the handshake names the new epoch, so
// the server aborts that association instead of linking the dead
// registration to it, which kept the old registration up for ever and
// refused the new process its name.
func TestLinkedWorkerRestartsOnItsPort(t *testing.T) {
	dir := t.TempDir()
	const timeout = 10 * time.Second
	srv := start(t, "server", "--listen", "127.0.0.1:0", "--data", dir, "--heartbeat-timeout", timeout.String(), "--liveness", "500ms")
	c := connect(t, srv, dir)
	addr := testport.Addr(t) // both processes listen there
	worker := func(server string) *proc {
		return start(t, "worker", "--server", server, "--threads", "1", "--name", "w1", "--liveness", "500ms",
			"--transport", "tcpn", "--listen", addr)
	}
	// The restarted worker reaches the server through a proxy that holds
	// its registration until the server has dialed it.
	target, err := url.Parse(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	relay := httputil.NewSingleHostReverseProxy(target)
	release := make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/workers" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		relay.ServeHTTP(w, r)
	}))
	defer front.Close()

	first := worker(c.URL())
	waitWorkersUp(t, c, 1)
	old := epochOf(t, c, "w1")
	kill9(t, first)
	srv.waitLog(t, regexp.MustCompile(`msg="(association down)"[^\n]*worker=w1`))
	worker(front.URL) // the restarted process; start stops it at the test's end
	deadline := time.Now().Add(time.Minute)
	for { // the server's redial for the old registration reached the new process
		log := srv.logText()
		if strings.Count(log, `msg="association up" component=dispatch worker=w1`) >= 2 || strings.Contains(log, `msg="association to worker refused`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not dial the restarted worker within a minute:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	asked := time.Now() // the registration goes on from here: the process's start is not the claim's
	close(release)
	waitUp(t, c, "w1", old)
	if d := time.Since(asked); d > timeout {
		t.Errorf("the worker restarted on its port took its name back in %v; want within the heartbeat timeout (%v)", d, timeout)
	}
}

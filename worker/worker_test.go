package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/internal/testport"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/worker"
)

var secret = []byte("worker test secret")

func startServer(t *testing.T, ctx context.Context) *client.Client {
	t.Helper()
	c, _ := startServerLog(t, ctx)
	return c
}

// startServerLog starts a server whose log the test can read.
func startServerLog(t *testing.T, ctx context.Context) (*client.Client, *testlog.Buffer) {
	t.Helper()
	return startServerWith(t, ctx, server.Config{})
}

// startServerWith starts a server with cfg's tuning (the test fills in the
// rest) and a log the test can read.
func startServerWith(t *testing.T, ctx context.Context, cfg server.Config) (*client.Client, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	cfg.Listen, cfg.DataDir, cfg.Secret = "127.0.0.1:0", t.TempDir(), secret
	cfg.Transports = map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})}
	cfg.Logger = logs.Logger(slog.LevelInfo)
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return client.New(s.URL()), logs
}

// Two servers share one worker's threads by demand: the only busy server
// gets all of them, two busy servers get half each at once, and the
// threads of a server that has nothing left to run go back to the other
// about a second later. Together they never hold more than the worker has.
func TestLeasesFollowDemand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := startServer(t, ctx), startServer(t, ctx)
	w, err := worker.New(worker.Config{Name: "shared", Servers: []string{a.URL(), b.URL()}, Threads: 4,
		Transport: tcpn.New(tcpn.Config{}), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	waitLeases(t, ctx, w, a, b, func(la, lb int) bool {
		return workerOf(ctx, a).State == api.WorkerUp && workerOf(ctx, b).State == api.WorkerUp
	})
	ja := longJob(t, ctx, a)
	waitLeases(t, ctx, w, a, b, func(la, lb int) bool { return la == 4 && lb == 0 })
	jb := longJob(t, ctx, b)
	waitLeases(t, ctx, w, a, b, func(la, lb int) bool { return la == 2 && lb == 2 })
	if _, err := a.Cancel(ctx, ja); err != nil {
		t.Fatal(err)
	}
	idle := time.Now()
	waitLeases(t, ctx, w, a, b, func(la, lb int) bool { return la == 0 && lb == 4 })
	if d := time.Since(idle); d < 500*time.Millisecond {
		t.Errorf("threads moved %v after the server went idle; the idle hold is 1s", d)
	}
	if _, err := b.Cancel(ctx, jb); err != nil {
		t.Fatal(err)
	}
}

// longJob submits a job that keeps a worker busy for longer than the test.
func longJob(t *testing.T, ctx context.Context, c *client.Client) string {
	t.Helper()
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Repeat: 5000})
	if err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// waitLeases polls both servers' view of the shared worker until ok holds.
// The two views may add up to more than the worker's threads for a moment,
// while one server has not yet read the lease that shrank its share (what
// it sends meanwhile waits for a thread on the worker); for 10 s, far
// longer than a loaded machine takes to deliver a lease, the worker would
// be lending threads it does not have.
func waitLeases(t *testing.T, ctx context.Context, w *worker.Worker, a, b *client.Client, ok func(la, lb int) bool) {
	t.Helper()
	var over time.Time // since when the views add up to more than 4
	for {
		la, lb := workerOf(ctx, a).Lease, workerOf(ctx, b).Lease
		switch {
		case la+lb <= 4:
			over = time.Time{}
		case over.IsZero():
			over = time.Now()
		case time.Since(over) > 10*time.Second:
			t.Fatalf("for %v the servers have held leases of %d+%d streams on a 4-thread worker (it lends %d)",
				time.Since(over).Round(time.Millisecond), la, lb, w.Info().LeasedThreads)
		}
		if ok(la, lb) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("leases a=%d b=%d never settled", la, lb)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// The scenario: two servers, two workers registered with both (4
// and 2 threads), a job on each server at once: each job uses both workers.
func TestSharedWorkersServeBothServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	a, b := startServer(t, ctx), startServer(t, ctx)
	var runs []chan error
	for i, threads := range []int{4, 2} {
		w, err := worker.New(worker.Config{Name: fmt.Sprintf("w%d", i+1), Servers: []string{a.URL(), b.URL()},
			Threads: threads, Transport: tcpn.New(tcpn.Config{}), Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		runs = append(runs, done)
	}
	defer func() {
		cancel()
		for _, d := range runs {
			<-d
		}
	}()
	for _, c := range []*client.Client{a, b} {
		for c := c; ; {
			if ws, _ := c.Workers(ctx); upCount(ws) == 2 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatal("workers not up on both servers")
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	obj, err := a.Put(ctx, bytes.NewReader(samples.GIF()))
	if err == nil {
		_, err = b.Put(ctx, bytes.NewReader(samples.GIF()))
	}
	if err != nil {
		t.Fatal(err)
	}
	spec := api.JobSpec{Op: "grayscale", Input: obj.ID, Repeat: 200}
	ids := make([]string, 2)
	for i, c := range []*client.Client{a, b} {
		j, err := c.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = j.ID
	}
	for i, c := range []*client.Client{a, b} {
		j, err := c.Wait(ctx, ids[i], nil)
		if err != nil || j.State != api.JobDone {
			t.Fatalf("job %d: %v %+v", i, err, j)
		}
		if j.UnitsPerWorker["w1"] == 0 || j.UnitsPerWorker["w2"] == 0 {
			t.Errorf("server %d ran its job on %v; both workers should serve both servers", i, j.UnitsPerWorker)
		}
	}
}

// A lone server keeps its lease through a lull longer than the idle hold:
// nobody else wants the threads, and its next job then starts on every
// stream at once rather than a round trip later. Before, the lease fell to
// what the server's last want asked for (0 between jobs).
func TestLoneServerKeepsLeaseThroughLull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startServer(t, ctx)
	const idle = 20 * time.Millisecond
	w, err := worker.New(worker.Config{Name: "lull", Servers: []string{c.URL()}, Threads: 2,
		Transport: tcpn.New(tcpn.Config{}), Secret: secret, LeaseIdle: idle})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, w)
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		t.Fatal(err)
	}
	lease := func() int {
		t.Helper()
		ws, err := c.Workers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("workers: %v %+v", err, ws)
		}
		return ws[0].Lease
	}
	j, err := c.Submit(ctx, api.JobSpec{Op: "grayscale", Input: obj.ID, Repeat: 8})
	if err != nil {
		t.Fatal(err)
	}
	if j, err = c.Wait(ctx, j.ID, nil); err != nil || j.State != api.JobDone {
		t.Fatalf("job: %v %+v", err, j)
	}
	time.Sleep(20 * idle) // the server asks for nothing now
	if got := lease(); got != 2 {
		t.Fatalf("after a lull of %v (idle hold %v): lease %d, want the 2 threads kept", 20*idle, idle, got)
	}
}

func upCount(ws []api.Worker) int {
	n := 0
	for _, w := range ws {
		if w.State == api.WorkerUp {
			n++
		}
	}
	return n
}

func workerOf(ctx context.Context, c *client.Client) api.Worker {
	return workerOfName(ctx, c, "shared")
}

// A worker outlives a server restart: the new server does not know it, says
// so on the next heartbeat, and the worker registers again.
func TestWorkerRegistersAgainAfterServerRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	runServer := func(addr string) (*server.Server, context.CancelFunc, chan error) {
		s, err := server.New(server.Config{Listen: addr, DataDir: dir, Secret: secret,
			HeartbeatInterval: 100 * time.Millisecond,
			Transports:        map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})}})
		if err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Run(sctx) }()
		return s, scancel, done
	}
	// A port outside the ephemeral range (testport.Addr): while the server
	// is down, any process's outgoing connection may be handed a port of
	// that range as its local one, the worker's own dials of it included
	// (a dial given the very port connects to itself until Go's dialer
	// notices and dials again), and the restart would find it taken.
	addr := testport.Addr(t)
	s1, stop1, done1 := runServer(addr)
	c := client.New(s1.URL())
	w, err := worker.New(worker.Config{Name: "phoenix", Servers: []string{c.URL()}, Threads: 1,
		Transport: tcpn.New(tcpn.Config{}), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	defer func() { cancel(); <-wdone }()
	waitUp(t, ctx, c)
	stop1()
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	_, stop2, done2 := runServer(addr)
	defer func() { stop2(); <-done2 }()
	waitUp(t, ctx, c)
}

func waitUp(t *testing.T, ctx context.Context, c *client.Client) {
	t.Helper()
	for workerOfName(ctx, c, "phoenix").State != api.WorkerUp {
		select {
		case <-ctx.Done():
			t.Fatal("worker not up")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func workerOfName(ctx context.Context, c *client.Client, name string) api.Worker {
	ws, _ := c.Workers(ctx)
	for _, w := range ws {
		if w.Info.Name == name {
			return w
		}
	}
	return api.Worker{}
}

// A worker told to stop hands back the units it has not started, finishes
// the running ones, deregisters and returns: when its association ends the
// server has nothing of its in flight to take back, and the job loses
// nothing and fails nothing. With a big window the worker's queue is full
// when it stops, and units keep arriving after it took its threads back.
// Byte budgets are off, so that the windows alone fill the queue (a budget
// that has not measured the worker yet keeps one unit queued at most).
func TestGracefulStopHandsBackUnits(t *testing.T) {
	for _, window := range []int{0, 16} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) { gracefulStop(t, window) })
	}
}

func gracefulStop(t *testing.T, window int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, logs := startServerWith(t, ctx, server.Config{Window: window, ByteHorizon: -1})
	run := func(name string, threads int) (context.CancelFunc, chan error) {
		wctx, stop := context.WithCancel(ctx)
		w, err := worker.New(worker.Config{Name: name, Servers: []string{c.URL()}, Threads: threads,
			Transport: tcpn.New(tcpn.Config{}), Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(wctx) }()
		return stop, done
	}
	stopStayer, stayer := run("stayer", 1)
	defer func() { stopStayer(); <-stayer }()
	stopQuitter, quitter := run("quitter", 2)
	if window > 0 {
		t.Logf("server window %d", window)
	}
	for upCount(mustWorkers(t, ctx, c)) < 2 {
		time.Sleep(20 * time.Millisecond)
	}
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		t.Fatal(err)
	}
	no := false
	const units = 60
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Repeat: units, Speculate: &no})
	if err != nil {
		t.Fatal(err)
	}
	// The quitter stops once it has done 3 units and holds more than it
	// runs: on a loaded machine its queue was empty at times, and then it
	// had nothing to hand back.
	held := 0
	for {
		s, err := c.Job(ctx, j.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		if s.UnitsPerWorker["quitter"] >= 3 {
			if held = workerOfName(ctx, c, "quitter").InFlightUnits; held > 2 {
				break
			}
		}
		if s.Terminal() {
			t.Fatal("job ended before the quitter did 3 units and held more than it runs")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stopQuitter()
	select {
	case err := <-quitter:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the stopping worker did not return")
	}
	if w := workerOfName(ctx, c, "quitter"); w.Info.Name != "" {
		t.Errorf("the stopped worker is still registered: %+v", w)
	}
	final, err := c.Wait(ctx, j.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.State != api.JobDone || final.Progress.Done != units || final.Progress.Failed != 0 {
		t.Fatalf("job after a graceful stop: %s %+v %q", final.State, final.Progress, final.Error)
	}
	again := 0
	for _, u := range final.Units {
		if u.Attempts > 1 {
			again++
		}
	}
	if again == 0 {
		t.Errorf("no unit was handed back (the quitter held %d in flight on 2 threads)", held)
	}
	down := regexp.MustCompile(`msg="association (?:closed|down)" component=dispatch worker=quitter .*units_requeued=(\d+)`).FindAllStringSubmatch(logs.String(), -1)
	if len(down) == 0 {
		t.Errorf("the server never logged the quitter's association ending:\n%s", logs)

	}
	for _, m := range down {
		if m[1] != "0" {
			t.Errorf("the server took back %s units when the quitter's association ended; it should have had none in flight", m[1])
		}
	}
	t.Logf("per worker %v, %d units placed again", final.UnitsPerWorker, again)
}

func mustWorkers(t *testing.T, ctx context.Context, c *client.Client) []api.Worker {
	t.Helper()
	ws, err := c.Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// A server that stops gracefully while its units are queued on a real
// worker gets their results and its drain ends with nothing in flight,
// not at its timeout: the worker keeps lending it the threads to finish
// what it holds.
func TestServerStopDrainsRealWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := &testlog.Buffer{}
	s, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Secret: secret, DrainTimeout: 20 * time.Second,
		Transports: map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})}, Logger: logs.Logger(slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stopServer := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- s.Run(sctx) }()
	c := client.New(s.URL())
	w, err := worker.New(worker.Config{Name: "solo", Servers: []string{c.URL()}, Threads: 1,
		Transport: tcpn.New(tcpn.Config{}), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	defer func() { cancel(); <-wdone }()
	for upCount(mustWorkers(t, ctx, c)) < 1 {
		time.Sleep(20 * time.Millisecond)
	}
	longJob(t, ctx, c)
	for w.Info().FreeThreads != 0 { // a unit is running, another queued behind it
		time.Sleep(5 * time.Millisecond)
	}
	stopServer()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	// The drain ended because nothing was in flight, not at its timeout.
	if l := logs.String(); !strings.Contains(l, "drained: no unit in flight") || strings.Contains(l, "drain timed out") {
		t.Errorf("the server did not drain; its drain waited for units the worker never ran:\n%s", l)
	}
}

// A worker whose unit runs past the drain timeout returns anyway, soon
// after it: an operation cannot be interrupted, but Run does not wait for
// it.
func TestWorkerStopIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startServer(t, ctx)
	wctx, stop := context.WithCancel(ctx)
	w, err := worker.New(worker.Config{Name: "slowpoke", Servers: []string{c.URL()}, Threads: 1, DrainTimeout: 200 * time.Millisecond,
		Transport: tcpn.New(tcpn.Config{}), Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	for upCount(mustWorkers(t, ctx, c)) < 1 {
		time.Sleep(20 * time.Millisecond)
	}
	obj, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	// A blur this wide on a 512×384 image runs for seconds.
	if _, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: obj.ID, Params: map[string]string{"sigma": "40"}, Repeat: 4}); err != nil {
		t.Fatal(err)
	}
	for w.Info().FreeThreads != 0 {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	stop()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("Run still waits for the running unit 8s after a stop with a 200ms drain timeout")
	}
	t.Logf("Run returned %v after the stop", time.Since(start).Round(time.Millisecond))
}

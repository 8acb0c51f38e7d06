package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/version"
)

var registrySecret = []byte("registry test secret")

// startRegistry runs a server with cfg's heartbeat and forget settings,
// fast heartbeats by default (100 ms, timed out after 500 ms), over tcpn
// unless cfg names transports, and returns a client with the worker token
// and the server's log.
func startRegistry(t *testing.T, cfg server.Config) (*client.Client, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	cfg.Listen, cfg.DataDir, cfg.Secret = "127.0.0.1:0", t.TempDir(), registrySecret
	if cfg.Transports == nil {
		cfg.Transports = map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})}
	}
	cfg.Logger = logs.Logger(slog.LevelInfo)
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 100 * time.Millisecond
	}
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = 500 * time.Millisecond
	}
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return client.New(s.URL()).WithSecret(registrySecret).WithRetry(client.Retry{For: -1}), logs
}

// process is one worker process as the registry sees it: a name, an epoch
// and endpoints nobody listens on (the registry does not need them).
func process(name string, epoch uint64, port string) api.WorkerInfo {
	return api.WorkerInfo{Name: name, Epoch: epoch, MaxThreads: 1, Ops: []string{"noop"},
		Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: "127.0.0.1:" + port}}}
}

// heartbeats sends info's heartbeats every 50 ms until stop is called.
func heartbeats(t *testing.T, c *client.Client, info api.WorkerInfo) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = c.Heartbeat(ctx, info.Name, info.Epoch)
			time.Sleep(50 * time.Millisecond)
		}
	})
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

func listed(t *testing.T, c *client.Client, name string) (api.Worker, bool) {
	t.Helper()
	ws, err := c.Workers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Info.Name == name {
			return w, true
		}
	}
	return api.Worker{}, false
}

// A second process under a live worker's name is refused with a 409 that
// names the holder, and the holder keeps its name; once the holder is
// silent, a new process takes the name within two heartbeat intervals
// (not the heartbeat timeout), and the old one's heartbeats and
// deregistration are then refused. The holder heartbeats every 50 ms, far
// within the registration's wait (two 1 s intervals: forty heartbeats,
// of which a loaded machine must deliver one).
func TestLiveWorkerKeepsItsName(t *testing.T) {
	c, logs := startRegistry(t, server.Config{HeartbeatInterval: time.Second, HeartbeatTimeout: time.Minute})
	ctx := testCtx(t)
	first, second := process("w1", 1, "9"), process("w1", 2, "10")
	if _, err := c.RegisterWorker(ctx, first); err != nil {
		t.Fatal(err)
	}
	stopFirst := heartbeats(t, c, first)
	if _, err := c.RegisterWorker(ctx, first); err != nil {
		t.Fatalf("the same process registering again: %v", err)
	}
	_, err := c.RegisterWorker(ctx, second)
	if apiCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "name w1 is in use by a live worker at tcpn 127.0.0.1:9") ||
		!strings.Contains(err.Error(), "pick another --name") {
		t.Fatalf("second process under a live name: %v; want a conflict naming the holder", err)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 1 {
		t.Fatalf("after the refusal w1 is epoch %d; want the holder's, 1", w.Info.Epoch)
	}
	if !strings.Contains(logs.String(), `msg="worker registration refused" worker=w1`) {
		t.Errorf("no log line for the refused registration:\n%s", logs)
	}

	stopFirst() // the first process dies
	asked := time.Now()
	if _, err := c.RegisterWorker(ctx, second); err != nil {
		t.Fatalf("new process under a silent worker's name: %v", err)
	}
	if d := time.Since(asked); d > 10*time.Second {
		t.Errorf("taking a dead worker's name took %v; want about two heartbeat intervals (2 s), not the heartbeat timeout (1 min)", d)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 2 {
		t.Fatalf("w1 is epoch %d; want the new process's, 2", w.Info.Epoch)
	}
	if err := c.Heartbeat(ctx, "w1", 1); apiCode(err) != api.CodeConflict {
		t.Errorf("the old process's heartbeat: %v; want a conflict", err)
	}
	if err := c.DeregisterWorker(ctx, "w1", 1); apiCode(err) != api.CodeConflict {
		t.Errorf("the old process's deregistration: %v; want a conflict", err)
	}
	if err := c.Heartbeat(ctx, "w1", 2); err != nil {
		t.Errorf("the new process's heartbeat: %v", err)
	}
	if _, ok := listed(t, c, "w1"); !ok {
		t.Fatal("the old process removed the new one's registration")
	}
}

// A worker whose heartbeats timed out is down; a new process takes its
// name at once, without waiting for the old one's heartbeat.
func TestDownWorkersNameIsFree(t *testing.T) {
	c, _ := startRegistry(t, server.Config{HeartbeatInterval: time.Minute, HeartbeatTimeout: 500 * time.Millisecond}) // would wait 2 min

	ctx := testCtx(t)
	if _, err := c.RegisterWorker(ctx, process("w1", 1, "9")); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "w1", api.WorkerDown)
	asked := time.Now()
	if _, err := c.RegisterWorker(ctx, process("w1", 2, "10")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(asked); d > time.Minute {
		t.Errorf("taking a down worker's name took %v; want no wait (2 min if it waited)", d)
	}
}

func waitState(t *testing.T, c *client.Client, name, state string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // heartbeats time out in under a second here
	for {
		w, ok := listed(t, c, name)
		if ok && w.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker %s: %+v (listed %v); want %s", name, w, ok, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// `braid workers rm` (DELETE without an epoch) removes a worker that is
// down, refuses one that is not (409), and does not know others (404).
// The live worker is on a server whose heartbeat timeout (1 min) it cannot
// reach during the test; the dead one goes down, silent, on a server with
// a short timeout.
func TestRemoveWorker(t *testing.T) {
	ctx := testCtx(t)
	patient, _ := startRegistry(t, server.Config{HeartbeatTimeout: time.Minute})
	if _, err := patient.RegisterWorker(ctx, process("live", 1, "9")); err != nil {
		t.Fatal(err)
	}
	if err := patient.RemoveWorker(ctx, "live"); apiCode(err) != api.CodeConflict || !strings.Contains(err.Error(), "stop the worker instead") {
		t.Errorf("removing a live worker: %v; want a conflict", err)
	}
	if _, ok := listed(t, patient, "live"); !ok {
		t.Error("the live worker is gone")
	}

	c, _ := startRegistry(t, server.Config{HeartbeatTimeout: 300 * time.Millisecond})
	if _, err := c.RegisterWorker(ctx, process("dead", 2, "10")); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "dead", api.WorkerDown)
	if err := c.RemoveWorker(ctx, "dead"); err != nil {
		t.Errorf("removing a down worker: %v", err)
	}
	if err := c.RemoveWorker(ctx, "dead"); apiCode(err) != api.CodeNotFound {
		t.Errorf("removing it again: %v; want not found", err)
	}
	if _, ok := listed(t, c, "dead"); ok {
		t.Error("the removed worker is still listed")
	}
}

// A worker down for longer than ForgetWorkersAfter is no longer listed;
// when it heartbeats again it is told to register.
func TestDownWorkersAreForgotten(t *testing.T) {
	c, logs := startRegistry(t, server.Config{ForgetWorkersAfter: 300 * time.Millisecond})
	ctx := testCtx(t)
	if _, err := c.RegisterWorker(ctx, process("gone", 1, "9")); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "gone", api.WorkerDown)
	deadline := time.Now().Add(60 * time.Second)
	for _, ok := listed(t, c, "gone"); ok; _, ok = listed(t, c, "gone") {
		if time.Now().After(deadline) {
			t.Fatal("a worker down for 300 ms past its timeout is still listed after 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Heartbeat(ctx, "gone", 1); apiCode(err) != api.CodeNotFound {
		t.Errorf("heartbeat of a forgotten worker: %v; want not found", err)
	}
	if !strings.Contains(logs.String(), `msg="worker forgotten: down too long" component=dispatch worker=gone`) {
		t.Errorf("no log line for the forgotten worker:\n%s", logs)
	}
}

// /healthz names the build.
func TestHealthzVersion(t *testing.T) {
	c, _ := startRegistry(t, server.Config{})
	resp, err := http.Get(c.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Status, Version string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.Status != "ok" || h.Version == "" || h.Version != version.String() {
		t.Errorf("healthz: %+v; want status ok and version %q", h, version.String())
	}
}

// A process that takes a name over is dialled at once, even while the
// dial to the old process's endpoint is still pending: here one that
// accepts and never answers, where the dial would hang for the handshake
// timeout (set to 5 minutes, so that a loaded machine's slowness cannot
// pass for it).
func TestTakeoverDialsNewProcessAtOnce(t *testing.T) {
	c, _ := startRegistry(t, server.Config{HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Minute,
		Transports: map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{HandshakeTimeout: 5 * time.Minute})}})
	ctx := testCtx(t)
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	dialled := make(chan net.Conn, 1)
	go func() {
		if conn, err := hole.Accept(); err == nil {
			dialled <- conn
		}
	}()
	_, holePort, _ := net.SplitHostPort(hole.Addr().String())
	if _, err := c.RegisterWorker(ctx, process("w1", 1, holePort)); err != nil {
		t.Fatal(err)
	}
	select {
	case conn := <-dialled: // the server's dial now waits for a handshake that never comes
		defer conn.Close()
	case <-time.After(time.Minute):
		t.Fatal("the server did not dial the first process")
	}

	ln, err := tcpn.New(tcpn.Config{}).Listen("127.0.0.1:0", transport.ListenConfig{Secret: registrySecret, Name: "w1", RecStreams: 1, MaxStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	assoc := make(chan transport.Association, 1)
	go func() {
		if a, err := ln.Accept(ctx); err == nil {
			assoc <- a
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if _, err := c.RegisterWorker(ctx, process("w1", 2, port)); err != nil { // the holder is silent: taken after 200 ms
		t.Fatal(err)
	}
	select {
	case a := <-assoc:
		defer a.Abort(errors.New("test over"))
	case <-time.After(time.Minute):
		t.Fatal("the new process was not dialled within a minute of taking the name; the old dial hangs for 5")
	}
	waitState(t, c, "w1", api.WorkerUp)
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 2 {
		t.Errorf("w1 is up with epoch %d; want the new process's, 2", w.Info.Epoch)
	}
}

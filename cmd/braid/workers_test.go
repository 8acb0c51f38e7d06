package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
)

const testSecret = "cmd test secret"

// startTestServer runs a real server on loopback whose workers time out
// only after a minute of silence: no test sees a worker go down by
// accident.
func startTestServer(t *testing.T) string {
	t.Helper()
	return startTestServerTimeout(t, time.Minute)
}

// startTestServerTimeout runs a real server on loopback whose workers time
// out after timeout of silence.
func startTestServerTimeout(t *testing.T, timeout time.Duration) string {
	t.Helper()
	s, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Secret: []byte(testSecret),
		Transports:        map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})},
		HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s.URL()
}

// --threads is checked before anything starts, naming the limit.
func TestWorkerThreadsFlag(t *testing.T) {
	for _, n := range []string{"0", "-1", "100000"} {
		code, _, stderr := runCmdEnv(t, map[string]string{"BRAID_SECRET": "s"}, "worker", "--server", "http://127.0.0.1:1", "--threads", n)
		want := "braid worker: --threads " + n + ": want 1 to 1024 processing threads (leave it out for one per CPU)\n"
		if code != 2 || stderr != want {
			t.Errorf("--threads %s: exit %d, stderr %q; want 2 and %q", n, code, stderr, want)
		}
	}
}

// A worker refused for good exits 1, saying by which server and why.
func TestWorkerRejectedExits(t *testing.T) {
	url := startTestServer(t)
	code, _, stderr := runCmdEnv(t, map[string]string{"BRAID_SECRET": "not it"}, "worker", "--server", url, "--transport", "tcpn", "--threads", "1")
	want := "braid worker: rejected by server " + url + ": wrong cluster secret"
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 and %q", code, stderr, want)
	}
}

// braid workers rm removes workers that are down, refuses live ones and
// unknown ones (exit 1, going on past failures), and needs the secret.
// Workers time out after 2 s: the dead one, silent, goes down; the live
// one heartbeats every 50 ms, and only a 2 s stall could take it down.
func TestWorkersRm(t *testing.T) {
	url := startTestServerTimeout(t, 2*time.Second)
	c := client.New(url).WithSecret([]byte(testSecret))
	ctx := context.Background()
	for _, name := range []string{"dead", "live"} {
		info := api.WorkerInfo{Name: name, Epoch: 1, MaxThreads: 1, Ops: []string{"noop"},
			Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: "127.0.0.1:9"}}}
		if _, err := c.RegisterWorker(ctx, info); err != nil {
			t.Fatal(err)
		}
	}
	beat, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for beat.Err() == nil {
			_ = c.Heartbeat(beat, "live", 1)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	for deadline := time.Now().Add(time.Minute); ; {
		ws, _ := c.Workers(ctx)
		if len(ws) == 2 && ws[0].Info.Name == "dead" && ws[0].State == api.WorkerDown {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers: %+v; want dead to be down", ws)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, _, stderr := runCmd(t, "workers", "rm", "--server", url, "dead")
	if code != 2 || !strings.Contains(stderr, "needs the cluster secret") {
		t.Errorf("without the secret: exit %d, stderr %q", code, stderr)
	}
	code, stdout, stderr := runCmdEnv(t, map[string]string{"BRAID_SECRET": testSecret}, "workers", "rm", "--server", url, "live", "dead", "nobody")
	if code != 1 || stdout != "removed worker dead\n" {
		t.Errorf("exit %d, stdout %q; want 1 and only dead removed", code, stdout)
	}
	for _, want := range []string{"live: worker live is connecting (last heartbeat ", "stop the worker instead", `nobody: worker "nobody" is not registered`, "2 of 3 not removed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if ws, _ := c.Workers(ctx); len(ws) != 1 || ws[0].Info.Name != "live" {
		t.Errorf("workers after rm: %+v; want only live", ws)
	}
}

// --forget-workers-after 0 would forget workers the moment they are down.
func TestForgetWorkersAfterZero(t *testing.T) {
	code, _, stderr := runCmd(t, "server", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--forget-workers-after", "0")
	if code != 2 || !strings.Contains(stderr, "--forget-workers-after 0") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

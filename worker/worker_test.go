package worker_test

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
	"github.com/braidhq/braid/worker"
)

var secret = []byte("worker test secret")

func startServer(t *testing.T, ctx context.Context) *client.Client {
	t.Helper()
	s, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Secret: secret,
		Transports: map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})}})
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
	return client.New(s.URL())
}

// Two servers share one worker's threads: together they never hold more
// streams than the worker has threads, and the one left out says why.
func TestThreadsSharedAcrossServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := startServer(t, ctx), startServer(t, ctx)
	w, err := worker.New(worker.Config{Name: "shared", Servers: []string{a.URL(), b.URL()}, Threads: 2,
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
	for {
		wa, wb := workerOf(ctx, a), workerOf(ctx, b)
		total := wa.Streams + wb.Streams
		if total > 2 {
			t.Fatalf("servers hold %d+%d streams on a 2-thread worker", wa.Streams, wb.Streams)
		}
		left := wa
		if wa.Streams > 0 {
			left = wb
		}
		if total == 2 && strings.Contains(left.Error, "no free processing threads") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no settled state: a=%+v b=%+v", wa, wb)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func workerOf(ctx context.Context, c *client.Client) api.Worker {
	ws, _ := c.Workers(ctx)
	for _, w := range ws {
		if w.Info.Name == "shared" {
			return w
		}
	}
	return api.Worker{}
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
	s1, stop1, done1 := runServer("127.0.0.1:0")
	addr := s1.Addr().String()
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

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

package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/worker"
)

// beatCounter counts the heartbeats an HTTP client sends.
type beatCounter struct {
	beats atomic.Int64
}

func (b *beatCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/heartbeat") {
		b.beats.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// waitBeats waits until n heartbeats have been sent, or fails after within.
func (b *beatCounter) waitBeats(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for b.beats.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d heartbeats after %v; want %d", b.beats.Load(), within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A worker whose association with the server is up, told the linked
// interval (30 s: thirty 1 s intervals), sends no heartbeat for three
// intervals; when its association ends it beats at once, not after the
// linked interval. The association's liveness bound is 200 ms, its idle
// bound 2 s, within the 5 s heartbeat timeout: the server links it.
func TestLinkedWorkerBeatsRarely(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, _ := startServerWith(t, ctx, server.Config{HeartbeatInterval: time.Second, HeartbeatTimeout: 5 * time.Second,
		Liveness: 200 * time.Millisecond})
	counter := &beatCounter{}
	logs := &testlog.Buffer{}
	w, err := worker.New(worker.Config{Name: "w1", Servers: []string{c.URL()}, Threads: 1, Transport: tcpn.New(tcpn.Config{}),
		Secret: secret, Logger: logs.Logger(slog.LevelInfo), Liveness: 200 * time.Millisecond,
		HTTPClient: &http.Client{Transport: counter, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, w)
	waitUpNamed(t, ctx, c, "w1")
	// The first heartbeat with the association up is answered with the
	// linked interval.
	counter.waitBeats(t, counter.beats.Load()+1, 30*time.Second)
	linked := counter.beats.Load()
	time.Sleep(3 * time.Second) // a non-event: at the 1 s interval, three heartbeats
	if n := counter.beats.Load() - linked; n != 0 {
		t.Fatalf("a linked worker sent %d heartbeats in 3 s; want none (its next is due in 30 s)", n)
	}
	w.AbortAssociations(errors.New("test: association cut"))
	counter.waitBeats(t, linked+1, 20*time.Second) // the linked interval would take 30 s
	waitUpNamed(t, ctx, c, "w1")                   // the server dials it again
}

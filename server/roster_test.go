package server

import (
	"context"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// TestHeartbeatSkipsBusyLoop: a live worker's heartbeat is answered while
// the dispatch loop is busy, and still counts. (Through the loop, 10,000
// workers' heartbeats queued behind the units and timed the workers out.)
func TestHeartbeatSkipsBusyLoop(t *testing.T) {
	s := runTestServer(t, t.TempDir())
	c := client.New(s.URL()).WithSecret([]byte("s")).WithRetry(client.Retry{For: -1})
	info := api.WorkerInfo{Name: "w1", Epoch: 7, MaxThreads: 1, Ops: []string{"noop"},
		Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: "127.0.0.1:1"}}} // a transport the server lacks: no dial
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.RegisterWorker(ctx, info); err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	if !s.disp.post(func() { <-block }) {
		t.Fatal("the loop is not running")
	}
	defer close(block)
	before := time.Now()
	beat, cancelBeat := context.WithTimeout(ctx, 10*time.Second) // through the loop it waits for ever
	defer cancelBeat()
	if err := c.Heartbeat(beat, "w1", 7); err != nil {
		t.Fatalf("heartbeat while the loop is busy: %v", err)
	}
	if l := s.disp.roster.get("w1"); l == nil || l.lastSeen().Before(before) {
		t.Errorf("the heartbeat was answered but not recorded: %+v", l)
	}
	// Another process's heartbeat needs the loop's judgement: it waits.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if err := c.Heartbeat(short, "w1", 8); err == nil {
		t.Error("a heartbeat naming another epoch was answered without the loop")
	}
}

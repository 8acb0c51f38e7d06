package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/transport"
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

// TestHeartbeatsPaced: past HeartbeatRate workers each is told to beat
// less often, in the registration's answer and in every heartbeat's, and
// is given a timeout as much longer; the interval comes back down as
// workers leave.
func TestHeartbeatsPaced(t *testing.T) {
	s, err := New(Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Secret: []byte("s"),
		Transports: map[string]transport.Transport{"none": nil}, HeartbeatInterval: 100 * time.Millisecond,
		HeartbeatTimeout: 300 * time.Millisecond, HeartbeatRate: 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	c := client.New(s.URL()).WithSecret([]byte("s")).WithRetry(client.Retry{For: -1})
	var regs []api.Registration
	for i := range 10 {
		info := api.WorkerInfo{Name: fmt.Sprintf("w%d", i), Epoch: uint64(i + 1), MaxThreads: 1, Ops: []string{"noop"},
			Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: "127.0.0.1:1"}}}
		reg, err := c.RegisterWorker(ctx, info)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	if regs[0].HeartbeatMS != 100 || regs[9].HeartbeatMS != 500 {
		t.Errorf("registrations told %d ms (the 1st) and %d ms (the 10th); want 100 and 500 (10 workers at 20 beats/s)",
			regs[0].HeartbeatMS, regs[9].HeartbeatMS)
	}
	beat, err := c.Beat(ctx, "w0", 1)
	if err != nil || beat.HeartbeatMS != 500 {
		t.Errorf("the first worker's heartbeat: told %d ms (%v), want 500 now", beat.HeartbeatMS, err)
	}
	// Told 500 ms, w0 may be silent 1.5 s (5 intervals); the base timeout
	// would have taken it for dead after 300 ms.
	if l := s.disp.roster.get("w0"); s.disp.roster.timeoutOf(l) != 1500*time.Millisecond {
		t.Errorf("w0's timeout %v, want 1.5s", s.disp.roster.timeoutOf(l))
	}
	for i := 1; i < 10; i++ {
		if err := c.DeregisterWorker(ctx, fmt.Sprintf("w%d", i), uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if beat, err := c.Beat(ctx, "w0", 1); err != nil || beat.HeartbeatMS != 100 {
		t.Errorf("alone again: told %d ms (%v), want 100", beat.HeartbeatMS, err)
	}
}

// TestRosterLinks: a worker is linked while its association's quiet bound
// q leaves it time to beat over HTTP once a partition ends the
// association, q + q/2 + its interval within the heartbeat timeout of the
// interval it was last told, and only then is told the linked interval;
// its timeout, and the wait of a claim on its name, stay those of the
// interval. With the defaults (tcpn's 30 s idle bound, a 5 s timeout at
// 1 s, 800 heartbeats a second) it is linked from 9,000 workers on, and
// so at 10,000.
func TestRosterLinks(t *testing.T) {
	r := newRoster(time.Second, 5*time.Second, DefaultHeartbeatRate)
	l := &liveness{}
	r.tell(l)
	if r.linked(l) {
		t.Fatal("linked with no association")
	}
	l.link(30*time.Second, 3*time.Second) // tcpn's defaults: idle bound 30 s
	if r.linked(l) || string(r.answerFor(l)) != `{"heartbeat_ms":1000}` {
		t.Fatalf("a 30 s bound against a 5 s timeout: linked %v, answer %s; want not linked", r.linked(l), r.answerFor(l))
	}
	r.pace(8999) // told 11.248 s: timeout 56.24 s < 30 + 15 + 11.248 s
	r.tell(l)
	if r.linked(l) {
		t.Fatalf("linked at 8,999 workers: timeout %v; the bound, its half and the interval are 56.248 s", r.timeoutOf(l))
	}
	r.pace(10_000) // told 12.5 s: timeout 62.5 s
	if r.linked(l) {
		t.Fatal("linked by the pace alone: the process was told 11.248 s, and its timeout is 56.24 s until it is told more")
	}
	r.tell(l)
	if !r.linked(l) || string(r.answerFor(l)) != `{"heartbeat_ms":12500,"linked_heartbeat_ms":375000}` {
		t.Fatalf("a 30 s bound against a 62.5 s timeout: linked %v, answer %s; want linked, every 6 min 15 s", r.linked(l), r.answerFor(l))
	}
	if r.timeoutOf(l) != 62500*time.Millisecond || r.claimWait(l) != 25*time.Second {
		t.Errorf("linked: timeout %v, claim wait %v; want those of the 12.5 s interval, 62.5 s and 25 s", r.timeoutOf(l), r.claimWait(l))
	}
	l.link(0, 0)
	if r.linked(l) || string(r.answerFor(l)) != `{"heartbeat_ms":12500}` {
		t.Errorf("association down: linked %v, answer %s; want not linked", r.linked(l), r.answerFor(l))
	}
	// The margin is a half and an interval, not a quarter: at 1,000
	// heartbeats a second and 10,000 workers (told 10 s, timeout 50 s) a
	// 30 s bound fits with a quarter (37.5 s) but not with the margin
	// (55 s).
	r = newRoster(time.Second, 5*time.Second, 1000)
	r.pace(10_000)
	r.tell(l)
	l.link(30*time.Second, 3*time.Second)
	if r.linked(l) {
		t.Error("linked with a 30 s bound against a 50 s timeout at a 10 s interval; want not (55 s needed)")
	}
}

// TestHeardBy: the last word of an association, recorded when it ended,
// is a sign of life for the timeout (lastSeen) but not a heartbeat
// (lastBeat), and a later record of an earlier word moves nothing back.
func TestHeardBy(t *testing.T) {
	l := &liveness{}
	now := time.Now()
	l.seen(now)
	l.heardBy(now.Add(-time.Second))
	if !l.lastSeen().Equal(now) {
		t.Errorf("last seen %v; want %v, not the earlier word", l.lastSeen(), now)
	}
	l.heardBy(now.Add(time.Second))
	l.heardBy(now.Add(time.Second / 2))
	if !l.lastSeen().Equal(now.Add(time.Second)) || !l.lastBeat().Equal(now) {
		t.Errorf("last seen %v, last beat %v; want the later word, %v, and the heartbeat, %v",
			l.lastSeen(), l.lastBeat(), now.Add(time.Second), now)
	}
}

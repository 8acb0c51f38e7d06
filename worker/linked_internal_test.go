package worker

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
)

// fakeRegistry answers a worker's registration and heartbeats as a
// server of id "srv" that links it: interval 1 s, linked 30 s. It records
// when each heartbeat came.
type fakeRegistry struct {
	mu    sync.Mutex
	beats []time.Time
	puts  int // re-announces of the figures
}

func (f *fakeRegistry) RoundTrip(r *http.Request) (*http.Response, error) {
	var body any
	switch {
	case strings.HasSuffix(r.URL.Path, "/heartbeat"):
		f.mu.Lock()
		f.beats = append(f.beats, time.Now())
		f.mu.Unlock()
		body = api.Beat{HeartbeatMS: 1000, LinkedHeartbeatMS: 30_000}
	case r.Method == http.MethodPut:
		f.mu.Lock()
		f.puts++
		f.mu.Unlock()
		body = api.Registration{Name: "w1", HeartbeatMS: 1000, ServerID: "srv"}
	case r.Method == http.MethodDelete:
		return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody, Request: r}, nil
	default:
		body = api.Registration{Name: "w1", HeartbeatMS: 1000, ServerID: "srv"}
	}
	b, _ := json.Marshal(body)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(string(b))), Request: r}, nil
}

func (f *fakeRegistry) beatTimes() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.beats...)
}

// peerAssoc stands in for an association with a server: its id, and its
// end.
type peerAssoc struct {
	transport.Association
	id   string
	done chan struct{}
}

func (a *peerAssoc) Peer() transport.PeerInfo { return transport.PeerInfo{ID: a.id} }
func (a *peerAssoc) Done() <-chan struct{}    { return a.done }
func (a *peerAssoc) Err() error {
	select {
	case <-a.done:
		return transport.ErrClosed
	default:
		return nil
	}
}

// fakeBase is the one server of fakeRegisteredWorker.
const fakeBase = "http://srv.test"

// fakeRegisteredWorker is a worker whose one server (fakeBase) is reg.
func fakeRegisteredWorker(t *testing.T, reg *fakeRegistry) *Worker {
	t.Helper()
	w, err := New(Config{Name: "w1", Servers: []string{fakeBase}, Threads: 1, Transport: tcpn.New(tcpn.Config{}),
		Secret: []byte("s"), HTTPClient: &http.Client{Transport: reg}, NoWasm: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.ln.Close(); w.infoLn.Close() })
	return w
}

// runRegisterLoop runs w's register loop with fakeBase, inside the
// caller's synctest bubble, and returns what ends it and waits for it
// (the loop ends in the bubble, failed or not).
func runRegisterLoop(w *Worker) (stop func()) {
	w.announce[fakeBase] = make(chan struct{}, 1) // the bubble's: a wait on it is durable
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.registerLoop(ctx, fakeBase)
	}()
	return func() { cancel(); <-done }
}

// TestRegisterLoopLinked, in virtual time: the register loop heartbeats
// every interval (1 s) until the server's answer says it is linked and the
// worker has an association with that server (by its id); then every
// linked interval (30 s), so none in the next 20 s; the instant that
// association ends, at once, and every interval after. An association
// with another server links nothing.
func TestRegisterLoopLinked(t *testing.T) {
	reg := &fakeRegistry{}
	w := fakeRegisteredWorker(t, reg)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		defer runRegisterLoop(w)()
		other := &session{a: &peerAssoc{id: "another server", done: make(chan struct{})}}
		w.track(other, true)
		time.Sleep(1500 * time.Millisecond) // registered at 0, a heartbeat at 1 s, unlinked
		ours := &session{a: &peerAssoc{id: "srv", done: make(chan struct{})}}
		w.track(ours, true)
		time.Sleep(20 * time.Second) // the heartbeat at 2 s is answered linked: the next at 32 s
		if got := len(reg.beatTimes()); got != 2 {
			t.Fatalf("%d heartbeats in the first 21.5 s; want 2 (at 1 s, and at 2 s which linked the worker)", got)
		}
		cut := time.Now()
		close(ours.a.(*peerAssoc).done)
		synctest.Wait()
		beats := reg.beatTimes()
		if len(beats) != 3 || !beats[2].Equal(cut) {
			t.Fatalf("heartbeats %v after the association ended at %v; want one at once", offsets(beats, start), cut.Sub(start))
		}
		time.Sleep(2500 * time.Millisecond)
		if got := len(reg.beatTimes()); got != 5 {
			t.Errorf("%d heartbeats 2.5 s after the association ended; want 5 (every interval again)", got)
		}
	})
}

func offsets(ts []time.Time, start time.Time) []time.Duration {
	var out []time.Duration
	for _, t := range ts {
		out = append(out, t.Sub(start))
	}
	return out
}

// TestRegisterLoopReannounceUnlinks, in virtual time: a re-announce of the
// figures (PUT) registers the worker again, which may end its link (the
// server judges it by the interval it tells it from then on), so the
// worker heartbeats at the interval after it, not the linked interval,
// until a heartbeat's answer links it again.
func TestRegisterLoopReannounceUnlinks(t *testing.T) {
	reg := &fakeRegistry{}
	w := fakeRegisteredWorker(t, reg)
	synctest.Test(t, func(t *testing.T) {
		defer runRegisterLoop(w)()
		w.track(&session{a: &peerAssoc{id: "srv", done: make(chan struct{})}}, true)
		time.Sleep(1500 * time.Millisecond) // the heartbeat at 1 s is answered linked: the next at 31 s
		if got := len(reg.beatTimes()); got != 1 {
			t.Fatalf("%d heartbeats in 1.5 s; want 1", got)
		}
		w.reannounce()
		synctest.Wait()
		reg.mu.Lock()
		puts := reg.puts
		reg.mu.Unlock()
		if puts != 1 {
			t.Fatalf("%d re-announces; want 1", puts)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := len(reg.beatTimes()); got != 2 {
			t.Fatalf("%d heartbeats 1.5 s after the figures were re-announced; want 2 (one an interval after the PUT)", got)
		}
	})
}

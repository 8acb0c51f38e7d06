package client_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
)

// flaky serves a handler on a fixed loopback port that the test can take
// away — listener closed, open connections cut, so that dials are refused —
// and bring back on the same port, as a restarting server does. While it is
// away a socket bound to the port without listening keeps it, so that
// another test's listener is not given it (two parallel tests once were,
// and one's client uploaded to the other's server).
type flaky struct {
	t    *testing.T
	addr string
	h    http.Handler

	mu     sync.Mutex // guards srv, served and held
	srv    *http.Server
	served chan struct{} // closed when srv's Serve returns
	held   int           // the socket that keeps the port while away; -1: none
}

func newFlaky(t *testing.T, h http.Handler) *flaky {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &flaky{t: t, addr: ln.Addr().String(), h: h, held: -1}
	f.serve(ln)
	t.Cleanup(f.stop)
	return f
}

// stop takes the server down for good, the port let go.
func (f *flaky) stop() {
	f.down()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held >= 0 {
		_ = syscall.Close(f.held)
		f.held = -1
	}
}

func (f *flaky) URL() string { return "http://" + f.addr }

func (f *flaky) serve(ln net.Listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.srv = &http.Server{Handler: f.h}
	f.served = make(chan struct{})
	go func(srv *http.Server, done chan struct{}) {
		defer close(done)
		_ = srv.Serve(ln)
	}(f.srv, f.served)
}

// down closes the listener and every connection, waits for Serve to
// return, and keeps the port. A server already down stays so.
func (f *flaky) down() {
	f.mu.Lock()
	srv, served := f.srv, f.served
	f.srv = nil
	f.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-served
	fd, err := holdPort(f.addr)
	if err != nil {
		f.t.Errorf("keeping %s while away: %v", f.addr, err)
		return
	}
	f.mu.Lock()
	f.held = fd
	f.mu.Unlock()
}

// holdPort binds a TCP socket to addr without listening on it: dials to
// addr are refused, and the port is not given to anyone else.
func holdPort(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, err
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// As net.Listen does, past the closed connections' TIME_WAIT; a port
	// so bound is still never picked for a bind to port 0.
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// up listens on the same port again.
func (f *flaky) up() {
	f.mu.Lock()
	if f.held >= 0 {
		_ = syscall.Close(f.held)
		f.held = -1
	}
	f.mu.Unlock()
	deadline := time.Now().Add(time.Minute)
	for {
		ln, err := net.Listen("tcp", f.addr)
		if err == nil {
			f.serve(ln)
			return
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			f.t.Errorf("listening again on %s: %v", f.addr, err)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outage takes the server down now and brings it back after d; the
// returned channel is closed once it is back.
func (f *flaky) outage(d time.Duration) <-chan struct{} {
	f.down()
	back := make(chan struct{})
	go func() {
		defer close(back)
		time.Sleep(d)
		f.up()
	}()
	f.t.Cleanup(func() { <-back })
	return back
}

// fakeAPI is a braid server's control plane for one job, whose state the
// test sets. It counts the requests it gets by "METHOD /path" pattern.
type fakeAPI struct {
	mu      sync.Mutex // guards the fields below
	job     api.Job
	changed chan struct{} // closed and replaced when job changes
	hits    map[string]int
	// unavailable is how many GETs of a job to answer 503 first.
	unavailable int
	// dropPost makes POST /v1/jobs read the request and cut the
	// connection without an answer.
	dropPost bool
	// object is what GET /v1/objects/obj serves; cutObject makes the
	// first download cut the connection halfway.
	object    []byte
	cutObject bool
	// uploads holds the bodies POST /v1/objects received whole.
	uploads [][]byte

	mux *http.ServeMux
}

func newFakeAPI() *fakeAPI {
	a := &fakeAPI{
		job:     api.Job{ID: "job1", State: api.JobRunning, Progress: api.Progress{Total: 10, Running: 2, Pending: 8}},
		changed: make(chan struct{}),
		hits:    map[string]int{},
		mux:     http.NewServeMux(),
	}
	a.routes(a.mux)
	return a
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

func (a *fakeAPI) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/jobs", a.count(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, []api.Job{a.snapshot()}) }))
	mux.HandleFunc("GET /v1/jobs/{id}", a.count(a.known(a.getJob)))
	mux.HandleFunc("GET /v1/jobs/{id}/wait", a.count(a.known(a.wait)))
	mux.HandleFunc("GET /v1/jobs/{id}/events", a.count(a.known(a.events)))
	mux.HandleFunc("POST /v1/jobs", a.count(a.submit))
	mux.HandleFunc("GET /v1/objects/{id}", a.count(a.getObject))
	mux.HandleFunc("POST /v1/objects", a.count(a.putObject))
}

func (a *fakeAPI) count(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.hits[r.Pattern]++
		a.mu.Unlock()
		h(w, r)
	}
}

// known answers 404 for a job other than the fake's.
func (a *fakeAPI) known(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != a.snapshot().ID {
			writeJSON(w, 404, api.ErrorBody{Error: api.Error{Code: api.CodeNotFound, Message: "no job " + r.PathValue("id")}})
			return
		}
		h(w, r)
	}
}

func (a *fakeAPI) hitsOf(pattern string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[pattern]
}

// waitHits waits until pattern has had n requests.
func (a *fakeAPI) waitHits(t *testing.T, pattern string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for a.hitsOf(pattern) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d requests, want %d", pattern, a.hitsOf(pattern), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (a *fakeAPI) snapshot() api.Job {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.job
}

// watch returns the job and a channel closed at its next change.
func (a *fakeAPI) watch() (api.Job, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.job, a.changed
}

// finish makes the job done.
func (a *fakeAPI) finish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.job.State, a.job.Progress = api.JobDone, api.Progress{Total: 10, Done: 10}
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *fakeAPI) getJob(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	busy := a.unavailable > 0
	if busy {
		a.unavailable--
	}
	a.mu.Unlock()
	if busy {
		writeJSON(w, 503, api.ErrorBody{Error: api.Error{Code: api.CodeUnavailable, Message: "shutting down"}})
		return
	}
	writeJSON(w, 200, a.snapshot())
}

// wait long-polls until the job is terminal or the connection is cut.
func (a *fakeAPI) wait(w http.ResponseWriter, r *http.Request) {
	for {
		j, changed := a.watch()
		if j.Terminal() {
			writeJSON(w, 200, j)
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// events streams the job's state now and at each change, as the server does.
func (a *fakeAPI) events(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	for {
		j, changed := a.watch()
		ev := api.Event{Type: "progress", Job: j}
		if j.Terminal() {
			ev.Type = "done"
		}
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		w.(http.Flusher).Flush()
		if j.Terminal() {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

func (a *fakeAPI) submit(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	a.mu.Lock()
	drop := a.dropPost
	a.mu.Unlock()
	if drop {
		cut(w)
		return
	}
	writeJSON(w, 201, a.snapshot())
}

func (a *fakeAPI) getObject(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	b, half := a.object, a.cutObject
	a.cutObject = false
	a.mu.Unlock()
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if half {
		_, _ = w.Write(b[:len(b)/2])
		w.(http.Flusher).Flush()
		cut(w)
		return
	}
	_, _ = w.Write(b)
}

func (a *fakeAPI) putObject(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	a.mu.Lock()
	a.uploads = append(a.uploads, b)
	a.mu.Unlock()
	writeJSON(w, 201, api.Object{ID: "obj", Size: int64(len(b))})
}

// cut closes the connection under a handler, without an answer.
func cut(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// notes records a Retry policy's calls.
type notes struct {
	mu        sync.Mutex
	waits     []time.Duration
	errs      []string
	recovered int
}

func (n *notes) notify(err error, wait time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.waits = append(n.waits, wait)
	n.errs = append(n.errs, err.Error())
}

func (n *notes) recover() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.recovered++
}

func (n *notes) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return fmt.Sprintf("%d waits %v, recovered %d; errors:\n%s", len(n.waits), n.waits, n.recovered, strings.Join(n.errs, "\n"))
}

func (n *notes) counts() (waits, recovered int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.waits), n.recovered
}

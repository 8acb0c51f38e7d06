package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/version"
	"github.com/braidhq/braid/worker"
)

// newWorker makes a worker of one thread for servers, logging into logs
// at level.
func newWorker(t *testing.T, name string, sec []byte, level slog.Level, servers ...string) (*worker.Worker, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	w, err := worker.New(worker.Config{Name: name, Servers: servers, Threads: 1, Transport: tcpn.New(tcpn.Config{}),
		Secret: sec, Logger: logs.Logger(level)})
	if err != nil {
		t.Fatal(err)
	}
	return w, logs
}

// running is a worker's Run in progress: err is set when done is closed.
type running struct {
	done chan struct{}
	err  error
}

// run runs w until ctx ends or the test does.
func run(t *testing.T, ctx context.Context, w *worker.Worker) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{done: make(chan struct{})}
	go func() {
		r.err = w.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(60 * time.Second):
			t.Error("worker did not stop")
		}
	})
	return r
}

// runErr waits for Run's error.
func runErr(t *testing.T, r *running) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(30 * time.Second):
		t.Fatal("the worker kept running")
		return nil
	}
}

func waitUpNamed(t *testing.T, ctx context.Context, c *client.Client, name string) api.Worker {
	t.Helper()
	for {
		if w := workerOfName(ctx, c, name); w.State == api.WorkerUp {
			return w
		}
		select {
		case <-ctx.Done():
			t.Fatalf("worker %s not up", name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A second process started under a live worker's name is refused: it logs
// why and Run returns ErrRejected; the first keeps its name, its
// association and its version shows in the server's list. The heartbeat
// interval is the default (1 s), so that the first's heartbeat has a
// second of slack within the registration's two-interval wait; the second
// process asks three times, two seconds apart, before it gives up.
func TestSecondProcessUnderLiveNameStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _ := startServerWith(t, ctx, server.Config{HeartbeatInterval: time.Second, HeartbeatTimeout: time.Minute})
	first, _ := newWorker(t, "w1", secret, slog.LevelInfo, c.URL())
	run(t, ctx, first)
	up := waitUpNamed(t, ctx, c, "w1")
	if up.Info.Version != version.String() || up.Info.Version == "" {
		t.Errorf("listed version %q; want %q", up.Info.Version, version.String())
	}
	second, logs := newWorker(t, "w1", secret, slog.LevelInfo, c.URL())
	err := runErr(t, run(t, ctx, second))
	if n := strings.Count(logs.String(), `msg="name in use; asking again`); n != 2 {
		t.Errorf("the second process asked again %d times; want 2:\n%s", n, logs)
	}
	if !errors.Is(err, worker.ErrRejected) || !strings.Contains(err.Error(), "name w1 is in use by a live worker at tcpn "+first.DataAddr().String()) ||
		!strings.Contains(err.Error(), "pick another --name") {
		t.Fatalf("second process: %v; want a rejection naming the live holder", err)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="rejected by server"`) {
		t.Errorf("the rejected worker's log does not say so:\n%s", logs)
	}
	if w := workerOfName(ctx, c, "w1"); w.State != api.WorkerUp || w.Info.Epoch != first.Info().Epoch {
		t.Errorf("after the refusal w1 is %s with epoch %d; want up with the first's, %d", w.State, w.Info.Epoch, first.Info().Epoch)
	}
}

// A wrong secret, a URL that is not a braid server's API, or another HTTP
// service (a web server's HTML 404, or 200) is refused for good: the
// worker says so once, without "unreachable" or "retrying", and stops.
func TestPermanentRejectionStopsWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := startServerWith(t, ctx, server.Config{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path != "/ok/v1/workers" {
			w.WriteHeader(http.StatusNotFound)
		}
		_, _ = w.Write([]byte("<html><body><h1>Not Found</h1><hr><center>nginx</center></body></html>\n"))
	}))
	defer web.Close()
	for _, tc := range []struct {
		name, url string
		secret    []byte
		want      string
	}{
		{"secret", c.URL(), []byte("wrong"), "rejected by server " + c.URL() + ": wrong cluster secret"},
		{"path", c.URL() + "/braid", secret, "rejected by server " + c.URL() + "/braid: " + c.URL() + "/braid is not the server's base URL: " +
			"the API is not under /braid; give the server's base URL, such as " + c.URL()},
		{"ui", c.URL() + "/ui", secret, "rejected by server " + c.URL() + "/ui: " + c.URL() + "/ui is not the server's base URL: " +
			"the API is not under /ui; give the server's base URL, such as " + c.URL()},
		{"https", "https://" + strings.TrimPrefix(c.URL(), "http://"), secret, "rejected by server https://" + strings.TrimPrefix(c.URL(), "http://") +
			": https://" + strings.TrimPrefix(c.URL(), "http://") + " is not the server's base URL: it is an HTTP server; give the server's base URL, such as " + c.URL()},
		{"web404", web.URL, secret, "rejected by server " + web.URL + ": not a braid server: it answered 404 Not Found, not a braid error; " +
			"give the server's base URL"},
		{"web200", web.URL + "/ok", secret, "rejected by server " + web.URL + "/ok: not a braid server: it answered 200 OK with text/html, not JSON;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, logs := newWorker(t, "w-"+tc.name, tc.secret, slog.LevelInfo, tc.url)
			err := runErr(t, run(t, ctx, w))
			if !errors.Is(err, worker.ErrRejected) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Run: %v; want %q…", err, tc.want)
			}
			if l := logs.String(); strings.Contains(l, "unreachable") || strings.Contains(l, "retrying") || strings.Count(l, `msg="rejected by server"`) != 1 ||
				!strings.Contains(l, `msg="worker stopped"`) {
				t.Errorf("log:\n%s\nwant one rejection line, no unreachable one, and the stop", l)
			}
		})
	}
}

// Refused by one of two servers, a worker keeps serving the other and
// logs the refusal once.
func TestRejectionByOneOfTwoServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := startServerWith(t, ctx, server.Config{})
	w, logs := newWorker(t, "half", secret, slog.LevelInfo, c.URL(), c.URL()+"/nope")
	done := run(t, ctx, w)
	waitUpNamed(t, ctx, c, "half")
	waitLog(t, ctx, logs, `msg="rejected by server"`)
	time.Sleep(1500 * time.Millisecond) // a few registration rounds
	select {
	case <-done.done:
		t.Fatalf("the worker stopped though one server serves it: %v", done.err)
	default:
	}
	if n := strings.Count(logs.String(), `msg="rejected by server"`); n != 1 {
		t.Errorf("%d rejection lines; want 1:\n%s", n, logs)
	}
}

// Threads beyond the transport's stream limit, or negative, are refused
// before anything starts; 0 means one per CPU.
func TestThreadsChecked(t *testing.T) {
	for _, n := range []int{-1, 1025, 100000} {
		_, err := worker.New(worker.Config{Servers: []string{"http://127.0.0.1:1"}, Threads: n, Transport: tcpn.New(tcpn.Config{}), Secret: secret})
		if err == nil || !strings.Contains(err.Error(), "want 1 to 1024") {
			t.Errorf("Threads %d: %v; want a refusal naming the limit", n, err)
		}
	}
	w, err := worker.New(worker.Config{Servers: []string{"http://127.0.0.1:1"}, Transport: tcpn.New(tcpn.Config{}), Secret: secret})
	if err != nil || w.Info().MaxThreads < 1 {
		t.Errorf("Threads 0: %v, %d threads; want one per CPU", err, w.Info().MaxThreads)
	}
}

// A name a server would refuse (a space, a slash, a control character
// such as a terminal escape) is refused before anything starts.
func TestNameChecked(t *testing.T) {
	for _, name := range []string{"w 1", "a/b", "w\x1b[2J", "w\u009b", strings.Repeat("n", 129)} {
		_, err := worker.New(worker.Config{Name: name, Servers: []string{"http://127.0.0.1:1"}, Transport: tcpn.New(tcpn.Config{}), Secret: secret})
		if err == nil || !strings.Contains(err.Error(), "no spaces, slashes or control characters") {
			t.Errorf("name %q: %v; want a refusal", name, err)
		}
	}
}

// The longest names a server takes, 128 characters, work: in
// ASCII (longer than a handshake ID) and in 4-byte characters (512 bytes,
// longer than a handshake name). Before, the first failed the handshake
// and the second was cut mid-character and refused as another worker.
func TestLongestNamesRunUnits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := startServer(t, ctx)
	names := []string{strings.Repeat("n", api.MaxWorkerName), strings.Repeat("\U0001D534", api.MaxWorkerName)}
	for _, name := range names {
		w, _ := newWorker(t, name, secret, slog.LevelInfo, c.URL())
		run(t, ctx, w)
		waitUpNamed(t, ctx, c, name)
	}
	obj, err := c.Put(ctx, bytes.NewReader(samples.GIF()))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Submit(ctx, api.JobSpec{Op: "grayscale", Input: obj.ID, Repeat: 8})
	if err != nil {
		t.Fatal(err)
	}
	if j, err = c.Wait(ctx, j.ID, nil); err != nil || j.State != api.JobDone {
		t.Fatalf("job: %v %+v", err, j)
	}
	for _, name := range names { // up: its association too (a worker is connecting until then)
		if w := workerOfName(ctx, c, name); w.State != api.WorkerUp || w.Streams == 0 {
			t.Errorf("worker of %d bytes: %s with %d streams; want up, associated", len(name), w.State, w.Streams)
		}
	}
}

// Operators get a warning per failed unit naming job, unit, op and reason;
// at debug level a line per unit; a clean stop is logged at info level
// only, on both sides; the server's keys are job= and worker=, not
// grouped.
func TestWorkerLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, srvLogs := startServerWith(t, ctx, server.Config{})
	w, logs := newWorker(t, "logger", secret, slog.LevelDebug, c.URL())
	wctx, stop := context.WithCancel(ctx)
	done := run(t, wctx, w)
	waitUpNamed(t, ctx, c, "logger")

	gif := samples.GIF()
	bad, err := c.Put(ctx, bytes.NewReader(gif[:len(gif)/2]))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: bad.ID, Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	if j, err = c.Wait(ctx, j.ID, nil); err != nil || j.State != api.JobFailed {
		t.Fatalf("job on a truncated image: %+v %v; want failed", j, err)
	}
	failed := regexp.MustCompile(`level=WARN msg="unit failed" server=\S+ job=` + j.ID + ` unit=0 attempt=\d+ op=blur reason=`)
	if !failed.MatchString(logs.String()) {
		t.Errorf("no warning for the failed unit (want %s):\n%s", failed, logs)
	}
	if !strings.Contains(logs.String(), `level=DEBUG msg="unit received"`) {
		t.Errorf("no debug line per unit:\n%s", logs)
	}

	stop()
	if err := runErr(t, done); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="worker stopping"`, `msg="association closed"`, `msg=deregistered`, `msg="worker stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("worker log lacks %s:\n%s", want, logs)
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings; want only the failed unit's:\n%s", n, logs)
	}
	waitLog(t, ctx, srvLogs, `msg="worker deregistered"`)
	s := srvLogs.String()
	if strings.Contains(s, `msg="association down"`) || !strings.Contains(s, `msg="association closed" component=dispatch worker=logger`) {
		t.Errorf("server log of a clean worker stop; want association closed, not down:\n%s", s)
	}
	if strings.Contains(s, "dispatch.") {
		t.Errorf("server log keys are grouped:\n%s", s)
	}
}

// A server that cannot be reached is not a rejection: the worker says so
// once (not every second) and keeps trying.
func TestUnreachableServerLoggedOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // connections are refused from now on
	w, logs := newWorker(t, "patient", secret, slog.LevelInfo, url)
	r := run(t, ctx, w)
	waitLog(t, ctx, logs, `msg="server unreachable; retrying"`)
	time.Sleep(2500 * time.Millisecond) // several attempts
	select {
	case <-r.done:
		t.Fatalf("the worker stopped: %v; want it to keep trying", r.err)
	default:
	}
	if n := strings.Count(logs.String(), `msg="server unreachable; retrying"`); n != 1 {
		t.Errorf("%d unreachable lines in 2.5 s after the first; want 1:\n%s", n, logs)
	}
}

// A server that answers with an error (a 500, a proxy's 502) is not
// unreachable: the worker says it erred, once, and keeps trying.
func TestServerErrorLoggedAsSuch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "upstream broke", http.StatusInternalServerError)
	}))
	defer srv.Close()
	w, logs := newWorker(t, "patient", secret, slog.LevelInfo, srv.URL)
	r := run(t, ctx, w)
	for calls.Load() < 3 { // several attempts
		select {
		case <-ctx.Done():
			t.Fatalf("%d calls; want 3", calls.Load())
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case <-r.done:
		t.Fatalf("the worker stopped: %v; want it to keep trying", r.err)
	default:
	}
	l := logs.String()
	if n := strings.Count(l, `level=WARN msg="server error; retrying"`); n != 1 || strings.Contains(l, "unreachable") ||
		!strings.Contains(l, "500 Internal Server Error (upstream broke)") {
		t.Errorf("log:\n%s\nwant one server error line naming the answer, and no unreachable one", l)
	}
}

// fakeRegistry is a braid worker registry that counts the calls it gets
// by method; refuse, if set, is its answer to every call.
type fakeRegistry struct {
	*httptest.Server
	mu     sync.Mutex
	calls  map[string]int
	called chan string // each call's method, if there is room
}

func newFakeRegistry(t *testing.T, refuse *api.Error, status int) *fakeRegistry {
	f := &fakeRegistry{calls: map[string]int{}, called: make(chan string, 100)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls[r.Method]++
		f.mu.Unlock()
		select {
		case f.called <- r.Method:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case refuse != nil:
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: *refuse})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/workers":
			_ = json.NewEncoder(w).Encode(api.Registration{Name: "w", HeartbeatMS: 100})
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// waitLog waits for line in logs.
func waitLog(t *testing.T, ctx context.Context, logs *testlog.Buffer, line string) {
	t.Helper()
	for !strings.Contains(logs.String(), line) {
		select {
		case <-ctx.Done():
			t.Fatalf("no log line %s:\n%s", line, logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// await waits for a call with method.
func (f *fakeRegistry) await(t *testing.T, ctx context.Context, method string) {
	t.Helper()
	for {
		select {
		case m := <-f.called:
			if m == method {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no %s call came", method)
		}
	}
}

func (f *fakeRegistry) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// New figures go to the servers that serve the worker, not to one that
// refused it for good.
func TestReannounceSkipsRejectingServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	good := newFakeRegistry(t, nil, 0)
	bad := newFakeRegistry(t, &api.Error{Code: api.CodeUnauthorized, Message: "wrong secret"}, http.StatusUnauthorized)
	w, logs := newWorker(t, "w", secret, slog.LevelInfo, good.URL, bad.URL)
	run(t, ctx, w)
	for !strings.Contains(logs.String(), `msg="rejected by server"`) || good.count(http.MethodPost) == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("no registration and rejection:\n%s", logs)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, f := range []*fakeRegistry{good, bad} { // forget the calls so far
		for len(f.called) > 0 {
			<-f.called
		}
	}
	for range 2 {
		w.Reannounce()
		good.await(t, ctx, http.MethodPut)
	}
	if n := bad.count(http.MethodPut); n != 0 || len(bad.called) != 0 {
		t.Errorf("the server that refused the worker got %d re-announcements (%d calls after the refusal); want none:\n%s", n, len(bad.called), logs)
	}
	if strings.Contains(logs.String(), "re-announcing") {
		t.Errorf("warnings about re-announcing:\n%s", logs)
	}
}

// A worker killed with -9 may have had a heartbeat in flight that the
// server handles after the registration of the process started in its
// place arrived: the new process is refused once (the name looks held by
// a live process), asks again two heartbeat intervals later, finds the
// holder silent and takes its name.
func TestRestartAfterKillWithHeartbeatInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, srvLogs := startServerWith(t, ctx, server.Config{HeartbeatInterval: 200 * time.Millisecond, HeartbeatTimeout: time.Minute})
	c = c.WithSecret(secret)
	killed := api.WorkerInfo{Name: "w1", Epoch: 1, MaxThreads: 1, Ops: []string{"noop"},
		Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: "127.0.0.1:9"}}}
	if _, err := c.RegisterWorker(ctx, killed); err != nil {
		t.Fatal(err)
	}
	// The killed process's heartbeats, still arriving until one of them
	// has had the new process refused.
	inFlight := make(chan struct{})
	go func() {
		defer close(inFlight)
		for !strings.Contains(srvLogs.String(), `msg="worker registration refused" worker=w1`) && ctx.Err() == nil {
			_ = c.Heartbeat(ctx, "w1", 1)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	w, logs := newWorker(t, "w1", secret, slog.LevelInfo, c.URL())
	r := run(t, ctx, w)
	<-inFlight
	for up := workerOfName(ctx, c, "w1"); up.State != api.WorkerUp || up.Info.Epoch != w.Info().Epoch; up = workerOfName(ctx, c, "w1") {
		select {
		case <-r.done:
			t.Fatalf("the restarted worker stopped: %v\n%s", r.err, logs)
		case <-ctx.Done():
			t.Fatalf("w1 is %s with epoch %d; want up with the restarted process's, %d", up.State, up.Info.Epoch, w.Info().Epoch)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !strings.Contains(logs.String(), `msg="name in use; asking again`) {
		t.Errorf("no line saying the worker asks again:\n%s", logs)
	}
}

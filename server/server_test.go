package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/worker"
)

// startCluster runs a real server and workers on loopback for one test.
func startCluster(t *testing.T, workers ...cluster.WorkerSpec) *cluster.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Errorf("cluster close: %v", err)
		}
	})
	return cl
}

// restartWithWorkers stops cl and starts a server on its data directory
// dir again, with a worker of two threads; the test closes it at its end.
func restartWithWorkers(t *testing.T, cl *cluster.Cluster, dir string) *cluster.Cluster {
	t.Helper()
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.Start(testCtx(t), cluster.Config{DataDir: dir, Workers: []cluster.WorkerSpec{{Threads: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func testCtx(t *testing.T) context.Context {
	return ctxFor(t, 60*time.Second)
}

// wasmTimeout bounds a test that runs a module built by Go on a worker,
// which compiles it first: under the race detector, on a 2-core machine
// loaded by other work, compiling examples/ops/wordcount (2.8 MB) took
// 76 s (6 s without the race detector).
const wasmTimeout = 5 * time.Minute

// ctxFor is a context that ends after d or with the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func put(t *testing.T, c *client.Client, b []byte) string {
	t.Helper()
	obj, err := c.Put(testCtx(t), bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return obj.ID
}

func runJob(t *testing.T, c *client.Client, spec api.JobSpec) api.Job {
	t.Helper()
	return runJobCtx(t, testCtx(t), c, spec)
}

// runJobCtx is runJob within ctx.
func runJobCtx(t *testing.T, ctx context.Context, c *client.Client, spec api.JobSpec) api.Job {
	t.Helper()
	j, err := c.Submit(ctx, spec)
	if err != nil {
		t.Fatalf("submit %+v: %v", spec, err)
	}
	j, err = c.Wait(ctx, j.ID, nil)
	if err != nil {
		t.Fatalf("wait %s: %v", j.ID, err)
	}
	return j
}

// TestClusterOverHTTPS: with the control plane on HTTPS (as `braid server`
// serves it off loopback), a client and a worker that trust the authority
// run a job, and a client that does not is refused.
func TestClusterOverHTTPS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), TLS: serverTLS(t),
		Workers: []cluster.WorkerSpec{{Threads: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if !strings.HasPrefix(cl.Server.URL(), "https://") {
		t.Fatalf("server URL %s, want https", cl.Server.URL())
	}
	j := runJob(t, cl.Client, api.JobSpec{Op: "grayscale", Input: put(t, cl.Client, samples.GIF())})
	if j.State != api.JobDone {
		t.Fatalf("job %s: %s", j.State, j.Error)
	}
	if _, err := client.New(cl.Server.URL()).WithRetry(client.Retry{For: -1}).Jobs(testCtx(t)); err == nil {
		t.Error("a client without the authority listed the jobs")
	}
}

func TestRepeatJobEndToEnd(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2}, cluster.WorkerSpec{Threads: 2})
	c := cl.Client
	in := put(t, c, samples.GIF())
	for _, policy := range []string{"equal", "threads", "speed", "dynamic"} {
		j := runJob(t, c, api.JobSpec{Op: "blur", Input: in, Repeat: 20, Policy: policy})
		if j.State != api.JobDone || j.Progress.Done != 20 {
			t.Fatalf("%s: job %+v", policy, j)
		}
		want, err := ops.Run("blur", nil, samples.GIF())
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range j.UnitsPerWorker {
			total += n
		}
		if total != 20 {
			t.Errorf("%s: units per worker %v sum to %d, want 20", policy, j.UnitsPerWorker, total)
		}
		for _, u := range j.Units {
			got, err := c.GetBytes(testCtx(t), u.Output)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: unit %d output differs from a local blur (err %v)", policy, u.Index, err)
			}
			if u.Returned == nil || u.Sent == nil || u.ComputeMS <= 0 {
				t.Errorf("%s: unit %d lacks statistics: %+v", policy, u.Index, u)
			}
		}
		if j.AvgUnitMS <= 0 || j.MakespanMS < j.AvgUnitMS {
			t.Errorf("%s: paper metric missing: makespan %v avg %v", policy, j.MakespanMS, j.AvgUnitMS)
		}
		if policy == "equal" && (j.UnitsPerWorker["w1"] != 10 || j.UnitsPerWorker["w2"] != 10) {
			t.Errorf("equal: units per worker %v, want 10 each", j.UnitsPerWorker)
		}
	}
}

func TestTiledJobEqualsWholeImage(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2}, cluster.WorkerSpec{Threads: 1})
	in := put(t, cl.Client, samples.PNG())
	for _, op := range []string{"blur", "sobel", "sharpen"} {
		tiled := runJob(t, cl.Client, api.JobSpec{Op: op, Input: in, Tiles: "3x2"})
		whole := runJob(t, cl.Client, api.JobSpec{Op: op, Input: in})
		if tiled.State != api.JobDone || whole.State != api.JobDone {
			t.Fatalf("%s: tiled %s (%s), whole %s (%s)", op, tiled.State, tiled.Error, whole.State, whole.Error)
		}
		if tiled.Result != whole.Result {
			t.Errorf("%s: stitched 3x2 result %s differs from whole-image result %s", op, tiled.Result, whole.Result)
		}
	}
}

func apiCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

func TestBadInputIsRejectedAndChangesNothing(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 1})
	c := cl.Client
	ctx := testCtx(t)
	gif := put(t, c, samples.GIF())
	cases := []struct {
		name string
		spec api.JobSpec
		code string
	}{
		{"unknown op", api.JobSpec{Op: "teleport", Input: gif}, api.CodeUnknownOp},
		{"missing object", api.JobSpec{Op: "blur", Input: strings.Repeat("0", 64)}, api.CodeNoObject},
		{"not an id", api.JobSpec{Op: "blur", Input: "../etc/passwd"}, api.CodeBadRequest},
		{"bad param", api.JobSpec{Op: "blur", Input: gif, Params: map[string]string{"sigma": "abc"}}, api.CodeBadParameter},
		{"unknown param", api.JobSpec{Op: "blur", Input: gif, Params: map[string]string{"colour": "red"}}, api.CodeBadParameter},
		{"bad tiles", api.JobSpec{Op: "blur", Input: gif, Tiles: "0x9"}, api.CodeBadParameter},
		{"resize tiled", api.JobSpec{Op: "resize", Input: gif, Tiles: "2x2", Params: map[string]string{"width": "10"}}, api.CodeBadParameter},
		{"repeat and tiles", api.JobSpec{Op: "blur", Input: gif, Tiles: "2x2", Repeat: 3}, api.CodeBadRequest},
		{"bad policy", api.JobSpec{Op: "blur", Input: gif, Policy: "random"}, api.CodeBadParameter},
		{"negative repeat", api.JobSpec{Op: "blur", Input: gif, Repeat: -1}, api.CodeBadParameter},
	}
	for _, tc := range cases {
		_, err := c.Submit(ctx, tc.spec)
		if got := apiCode(err); got != tc.code {
			t.Errorf("%s: error %v (code %q), want code %q", tc.name, err, got, tc.code)
		} else if strings.TrimSpace(err.Error()) == tc.code+":" {
			t.Errorf("%s: error has no message", tc.name)
		}
	}
	for _, body := range []string{"{", `{"op":"blur","input":1}`, `{"op":"blur"} trailing`, `{"opp":"blur"}`} {
		resp, err := http.Post(c.URL()+"/v1/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), api.CodeMalformedJSON) {
			t.Errorf("body %q: %d %s", body, resp.StatusCode, b)
		}
	}
	if jobs, err := c.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("rejected submissions created jobs: %v %v", jobs, err)
	}
	// The server still serves a good job afterwards.
	if j := runJob(t, c, api.JobSpec{Op: "grayscale", Input: gif}); j.State != api.JobDone {
		t.Fatalf("good job after bad input: %+v", j)
	}
}

// TestUndecodableImageFailsJobNamingUnit: an input whose header is a
// GIF's (so submit takes it) but whose pixels are cut short fails on the
// worker, and the job's error names the unit and the reason.
func TestUndecodableImageFailsJobNamingUnit(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2})
	gif := samples.GIF()
	junk := put(t, cl.Client, gif[:len(gif)/2])
	j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: junk, Repeat: 3})
	if j.State != api.JobFailed || !strings.Contains(j.Error, "unit ") || !strings.Contains(strings.ToLower(j.Error), "image") {
		t.Fatalf("job state %s error %q: want failed, naming the unit and the reason", j.State, j.Error)
	}
	in := put(t, cl.Client, samples.GIF())
	if j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: in}); j.State != api.JobDone {
		t.Fatalf("good job after a failed one: %s %s", j.State, j.Error)
	}
}

func TestOversizeUpload(t *testing.T) {
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), MaxObjectSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = cl.Client.Put(ctx, bytes.NewReader(make([]byte, 1001)))
	if apiCode(err) != api.CodeTooLarge {
		t.Fatalf("oversize upload: %v", err)
	}
	// Streaming body without a length: the limit still holds.
	_, err = cl.Client.Put(ctx, io.LimitReader(zeroReader{}, 5000))
	if apiCode(err) != api.CodeTooLarge {
		t.Fatalf("oversize streamed upload: %v", err)
	}
	if objs, _ := cl.Client.Objects(ctx); len(objs) != 0 {
		t.Fatalf("oversize upload left objects: %v", objs)
	}
}

// TestStalledUpload: a client that stops sending mid-body gets 408 after
// the idle timeout, nothing is stored, no temporary file stays, and the
// server goes on serving.
func TestStalledUpload(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, UploadIdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(cl.Server.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/objects HTTP/1.1\r\nHost: braid\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n")
	if _, err := conn.Write(make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	// Then nothing more: the server must give up on its own.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var eb struct{ Error api.Error }
	if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(body, &eb) != nil || eb.Error.Code != api.CodeTimeout {
		t.Fatalf("stalled upload: %d %s, want 408 %s", resp.StatusCode, body, api.CodeTimeout)
	}
	if objs, _ := cl.Client.Objects(ctx); len(objs) != 0 {
		t.Fatalf("stalled upload left objects: %v", objs)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*", "tmp", "*")); len(tmp) != 0 {
		t.Fatalf("stalled upload left temporary files: %v", tmp)
	}
	// A slow upload that keeps moving is not cut off, though it takes
	// longer than the idle timeout. (A byte a tenth of the timeout apart:
	// a loaded machine that delays one by the other nine tenths is rare.)
	slow := &tricklingReader{left: 15, every: 100 * time.Millisecond}
	if _, err := cl.Client.Put(ctx, slow); err != nil {
		t.Fatalf("slow but steady upload (1.5 s in all, idle timeout 1 s): %v", err)
	}
}

// tricklingReader yields one byte per read, every interval.
type tricklingReader struct {
	left  int
	every time.Duration
}

func (r *tricklingReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.every)
	r.left--
	p[0] = 'x'
	return 1, nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestWaitingForCapableWorker(t *testing.T) {
	cl := startCluster(t) // no workers
	ctx := testCtx(t)
	in := put(t, cl.Client, samples.GIF())
	j, err := cl.Client.Submit(ctx, api.JobSpec{Op: "sobel", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler's loop says why a moment after the submit.
	waitFor(ctx, t, "the job to say why it waits", func() bool {
		if j, err = cl.Client.Job(ctx, j.ID, false); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(j.Waiting, "sobel")
	})
	if j.State != api.JobQueued || !strings.Contains(j.Waiting, "sobel") {
		t.Fatalf("job with no capable worker: state %s waiting %q", j.State, j.Waiting)
	}
}

func TestGarbageOnDataPlaneKeepsWorkerServing(t *testing.T) {
	// Junk that is wrong from its first bytes; a silent or half-sent peer is
	// dropped only after the handshake timeout (10 s), as the transport tests
	// check.
	junks := [][]byte{[]byte("GET / HTTP/1.0\r\n\r\n"), bytes.Repeat([]byte{0xff}, 4096)}
	for _, tname := range []string{"tcpn", "sctp"} {
		t.Run(tname, func(t *testing.T) {
			cl := startCluster(t, cluster.WorkerSpec{Threads: 2, Transport: tname})
			addr := cl.Workers[0].DataAddr().String()
			for _, junk := range junks {
				if tname == "sctp" {
					sendUDP(t, addr, junk)
				} else {
					sendTCP(t, addr, junk)
				}
			}
			in := put(t, cl.Client, samples.GIF())
			if j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: in, Repeat: 4}); j.State != api.JobDone {
				t.Fatalf("job after garbage: %s %s", j.State, j.Error)
			}
		})
	}
}

// sendTCP writes junk and waits for the worker to hang up (not hang).
func sendTCP(t *testing.T, addr string, junk []byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write(junk)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("worker did not hang up on %d bytes of garbage within 5 s", len(junk))
	}
}

// sendUDP sends junk datagrams to a UDP-based (SCTP) listener.
func sendUDP(t *testing.T, addr string, junk []byte) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 10 {
		_, _ = conn.Write(junk)
	}
}

// A worker with the wrong secret is refused registration, says so and
// stops (worker.ErrRejected); nobody without the secret can change the
// registry; the good worker runs every unit.
func TestWrongSecretWorkerGetsNoUnits(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Name: "good", Threads: 1})
	ctx := testCtx(t)
	intruder, err := worker.New(worker.Config{Name: "intruder", Servers: []string{cl.Server.URL()}, Threads: 2,
		Transport: tcpn.New(tcpn.Config{}), Secret: []byte("not the secret")})
	if err != nil {
		t.Fatal(err)
	}
	if err := intruder.Run(ctx); !errors.Is(err, worker.ErrRejected) || !strings.Contains(err.Error(), "wrong cluster secret") {
		t.Errorf("intruder's Run: %v; want a rejection naming the wrong secret", err)
	}
	info := api.WorkerInfo{Name: "forged", MaxThreads: 2, Ops: []string{"blur"},
		Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: "127.0.0.1:9"}}}
	for _, c := range []*client.Client{cl.Client, cl.Client.WithSecret([]byte("not the secret"))} {
		if _, err := c.RegisterWorker(ctx, info); apiCode(err) != api.CodeUnauthorized {
			t.Errorf("registration without the secret: %v, want %s", err, api.CodeUnauthorized)
		}
		if err := c.RemoveWorker(ctx, "good"); apiCode(err) != api.CodeUnauthorized {
			t.Errorf("removal without the secret: %v, want %s", err, api.CodeUnauthorized)
		}
	}
	in := put(t, cl.Client, samples.GIF())
	j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: in, Repeat: 6})
	if j.State != api.JobDone || j.UnitsPerWorker["good"] != 6 {
		t.Fatalf("job: %s, units per worker %v", j.State, j.UnitsPerWorker)
	}
	ws, err := cl.Client.Workers(ctx)
	if err != nil || len(ws) != 1 || ws[0].Info.Name != "good" || ws[0].State != api.WorkerUp {
		t.Fatalf("workers: %+v %v; want only the good one, up", ws, err)
	}
}

// A worker that registers with the right secret but whose data plane does
// not know it is refused at the handshake, and its status says why.
func TestWrongDataPlaneSecret(t *testing.T) {
	cl := startCluster(t)
	ctx := testCtx(t)
	tn := tcpn.New(tcpn.Config{})
	ln, err := tn.Listen("127.0.0.1:0", transport.ListenConfig{Secret: []byte("other"), Name: "odd",
		Admit: func(transport.PeerInfo, int) (int, func(), error) {
			t.Error("Admit called for a server that failed the handshake")
			return 0, nil, errors.New("no")
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _, _ = ln.Accept(ctx) }()
	info := api.WorkerInfo{Name: "odd", MaxThreads: 1, Ops: []string{"blur"},
		Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: ln.Addr().String()}}}
	c := cl.Client.WithSecret([]byte("braid-cluster-secret"))
	if _, err := c.RegisterWorker(ctx, info); err != nil {
		t.Fatal(err)
	}
	for {
		w, _ := cl.Client.Workers(ctx)
		if len(w) == 1 && w[0].State != api.WorkerUp && strings.Contains(strings.ToLower(w[0].Error), "secret") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("worker status: %+v", w)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestRestartKeepsFinishedAndResumesUnfinished(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir, Workers: []cluster.WorkerSpec{{Threads: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	in := put(t, cl.Client, samples.GIF())
	done := runJob(t, cl.Client, api.JobSpec{Op: "grayscale", Input: in, Repeat: 3})
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}

	// A server with no workers: the new job can only wait.
	cl, err = cluster.Start(ctx, cluster.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.Client.Job(ctx, done.ID, true)
	if err != nil || again.State != api.JobDone || again.Result != done.Result || len(again.Units) != 3 {
		t.Fatalf("finished job after restart: %+v, %v", again, err)
	}
	if _, err := cl.Client.GetBytes(ctx, done.Result); err != nil {
		t.Fatalf("result object after restart: %v", err)
	}
	pending, err := cl.Client.Submit(ctx, api.JobSpec{Op: "blur", Input: in, Repeat: 5})
	if err != nil {
		t.Fatal(err)
	}
	cl = restartWithWorkers(t, cl, dir)
	j, err := cl.Client.Wait(ctx, pending.ID, nil)
	if err != nil || j.State != api.JobDone || j.Progress.Done != 5 {
		t.Fatalf("unfinished job after restart: %+v, %v", j, err)
	}
}

func TestWorkerInfoEndpoint(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Name: "info", Threads: 3})
	ws, err := cl.Client.Workers(testCtx(t))
	if err != nil || len(ws) != 1 {
		t.Fatalf("workers: %v %v", ws, err)
	}
	w := ws[0]
	if w.Streams != 3 || w.Info.MaxThreads != 3 || w.Info.Cores < 1 || w.Info.RAMBytes <= 0 || len(w.Info.Ops) < 6 {
		t.Errorf("registered figures: %+v", w)
	}
	var info api.WorkerInfo
	for ctx := testCtx(t); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(w.Info.InfoURL + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		info = api.WorkerInfo{}
		err = json.NewDecoder(resp.Body).Decode(&info)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		// The worker lends its threads when it takes the association,
		// which may be just after the server sees it up.
		if info.LeasedThreads == 3 || ctx.Err() != nil {
			break
		}
	}
	if info.Name != "info" || info.FreeThreads != 3 || info.LeasedThreads != 3 || info.MaxThreads != 3 {
		t.Errorf("GET /v1/info: %+v (an idle worker lends its threads to its only server and runs nothing)", info)
	}
}

// Every transport carries jobs, and one server drives workers on different
// transports at once, following what each advertises.
func TestJobsOverEveryTransport(t *testing.T) {
	names := []string{"sctp", "tcpn", "tcp", "quic"}
	var specs []cluster.WorkerSpec
	for _, n := range names {
		specs = append(specs, cluster.WorkerSpec{Name: "w-" + n, Threads: 2, Transport: n})
	}
	cl := startCluster(t, specs...)
	ws, err := cl.Client.Workers(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if w.Transport != strings.TrimPrefix(w.Info.Name, "w-") || w.Streams != 2 {
			t.Errorf("worker %s: transport %q, %d streams", w.Info.Name, w.Transport, w.Streams)
		}
	}
	in := put(t, cl.Client, samples.GIF())
	// Without speculation, which on a loaded machine can give a straggler's
	// unit to an idle worker that finishes it first (a run gave tcpn 3,
	// tcp 5).
	no := false
	j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: in, Repeat: 4 * len(names), Policy: "equal", Speculate: &no})
	if j.State != api.JobDone {
		t.Fatalf("job: %s %s", j.State, j.Error)
	}
	for _, n := range names {
		if got := j.UnitsPerWorker["w-"+n]; got != 4 {
			t.Errorf("worker on %s ran %d units, want 4 (equal shares)", n, got)
		}
	}
}

func TestRefreshAsksTheWorker(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Name: "fresh", Threads: 2})
	post := func(path string, token string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, cl.Client.URL()+path, nil)
		req.Header.Set(api.WorkerTokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	token := api.WorkerToken([]byte("braid-cluster-secret"))
	if resp := post("/v1/workers/fresh/refresh", "wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("refresh with a wrong token: %d", resp.StatusCode)
	}
	// While a job keeps the worker busy, its figures differ from those it
	// registered with (no thread lent, none running: it registers before
	// any server associates); only a refresh that asks the worker can see
	// that. Its threads are lent from the association's start, so only the
	// running ones show the job.
	in := put(t, cl.Client, samples.PNG())
	j, err := cl.Client.Submit(testCtx(t), api.JobSpec{Op: "blur", Input: in, Repeat: 5000})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Client.Cancel(testCtx(t), j.ID)
	var w api.Worker
	for ctx := testCtx(t); (w.Info.LeasedThreads != 2 || w.Info.FreeThreads != 0) && ctx.Err() == nil; {
		resp := post("/v1/workers/fresh/refresh", token)
		w = api.Worker{}
		if err := json.NewDecoder(resp.Body).Decode(&w); err != nil || resp.StatusCode != 200 {
			t.Fatalf("refresh: %d %v", resp.StatusCode, err)
		}
		resp.Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	if w.Info.Name != "fresh" || w.Info.LeasedThreads != 2 || w.Info.FreeThreads != 0 || w.State != api.WorkerUp {
		t.Errorf("refreshed worker: %+v (both threads should be lent to the busy server and running its units)", w)
	}
	resp := post("/v1/workers/nobody/refresh", token)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("refresh of unknown worker: %d", resp.StatusCode)
	}
}

// TestTruncatedUpload: a body shorter than its Content-Length (the client
// closes its side after 10 of 100,000 bytes) is the client's error: 400
// with a message that says so, nothing stored, no temporary file left.
func TestTruncatedUpload(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	conn, err := net.Dial("tcp", strings.TrimPrefix(cl.Server.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/objects HTTP/1.1\r\nHost: braid\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\n0123456789")
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a truncated upload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var eb struct{ Error api.Error }
	if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &eb) != nil || eb.Error.Code != api.CodeBadRequest ||
		!strings.Contains(eb.Error.Message, "cut short after 10 bytes of the 100000") {
		t.Fatalf("truncated upload: %d %s, want 400 %s naming the 10 of 100000 bytes", resp.StatusCode, body, api.CodeBadRequest)
	}
	if objs, _ := cl.Client.Objects(ctx); len(objs) != 0 {
		t.Fatalf("truncated upload left objects: %v", objs)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "*", "tmp", "*")); len(tmp) != 0 {
		t.Fatalf("truncated upload left temporary files: %v", tmp)
	}
}

// TestWireLimitsAtTheEdge: parameters the data plane cannot carry are
// refused at submit with 400 naming the limit. A sigma of "2." and 70,000
// zeros parses as 2, but its value cannot be framed (at most 65,535 bytes):
// the old server accepted it and its unit then held a window slot for ever.
func TestWireLimitsAtTheEdge(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 1})
	ctx := testCtx(t)
	in := put(t, cl.Client, samples.GIF())
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("p%d", i)] = "1"
	}
	cases := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"long value", map[string]string{"sigma": "2." + strings.Repeat("0", 70_000)}, "at most 65535"},
		{"long name", map[string]string{strings.Repeat("k", 300): "1"}, "at most 255"},
		{"too many", many, "65 parameters: at most"},
	}
	for _, tc := range cases {
		for _, tiles := range []string{"", "2x2"} {
			_, err := cl.Client.Submit(ctx, api.JobSpec{Op: "blur", Input: in, Params: tc.params, Tiles: tiles})
			if apiCode(err) != api.CodeBadParameter || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (tiles %q): %.200v; want %s saying %q", tc.name, tiles, err, api.CodeBadParameter, tc.want)
			}
		}
	}
	if jobs, err := cl.Client.Jobs(ctx); err != nil || len(jobs) != 0 {
		t.Errorf("refused submissions created %d jobs (%v)", len(jobs), err)
	}
	// Just inside the limit is fine and runs.
	ok := map[string]string{"sigma": "2." + strings.Repeat("0", 65_533)}
	if j := runJob(t, cl.Client, api.JobSpec{Op: "blur", Input: in, Params: ok, Repeat: 3}); j.State != api.JobDone {
		t.Fatalf("a 65,535-byte value: %s %s", j.State, j.Error)
	}
}

// TestWindowLimit: a window the per-stream send queues cannot hold is
// refused when the server is made, with a message naming the range; the
// largest allowed one runs jobs. (Before, --window 100 made the server
// abort and redial its workers for ever.)
func TestWindowLimit(t *testing.T) {
	for _, w := range []int{-1, server.MaxWindow + 1, 100} {
		_, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Secret: []byte("s"),
			Transports: map[string]transport.Transport{"tcpn": tcpn.New(tcpn.Config{})}, Window: w})
		if err == nil || !strings.Contains(err.Error(), "window") || !strings.Contains(err.Error(), fmt.Sprintf("1 to %d", server.MaxWindow)) {
			t.Errorf("window %d: New returned %v, want an error naming the window's range", w, err)
		}
	}
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), Window: server.MaxWindow,
		Workers: []cluster.WorkerSpec{{Threads: 1, Transport: "tcpn"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	in := put(t, cl.Client, samples.GIF())
	if j := runJob(t, cl.Client, api.JobSpec{Op: "noop", Input: in, Repeat: 300}); j.State != api.JobDone {
		t.Fatalf("window %d: %s %s", server.MaxWindow, j.State, j.Error)
	}
}

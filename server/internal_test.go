package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/wire"
	bolt "go.etcd.io/bbolt"
)

// newTestServer makes a server on dir without running it; the test owns
// its dispatcher (no loop runs).
func newTestServer(t testing.TB, dir string) *Server {
	t.Helper()
	s, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Secret: []byte("s"),
		Transports: map[string]transport.Transport{"none": nil}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.ln.Close()
		s.db.Close()
	})
	return s
}

// runTestServer runs a server on dir until the test ends.
func runTestServer(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := New(Config{Listen: "127.0.0.1:0", DataDir: dir, Secret: []byte("s"),
		Transports: map[string]transport.Transport{"none": nil}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

// fakeAssoc stands in for an association in tests that drive the
// dispatcher by hand; only Abort (on a send queue overflow) is used.
type fakeAssoc struct {
	transport.Association
	aborted error
}

func (a *fakeAssoc) Abort(err error) { a.aborted = err }
func (a *fakeAssoc) Streams() int    { return 1 }

// TestUnsendableUnitFails: an assignment the wire cannot encode (a job
// that reached the core without the edge's checks, as a job resumed from
// an older server may) fails its unit and its job, and frees the stream's
// window slot, instead of counting in flight for ever.
func TestUnsendableUnitFails(t *testing.T) {
	s := newTestServer(t, t.TempDir())
	d := s.disp
	queue := make(chan []byte, 64)
	d.workers["w"] = &workerConn{info: api.WorkerInfo{Name: "w"}, assoc: &fakeAssoc{}, queues: []chan []byte{queue}, wantQ: make(chan []byte, 1)}
	d.step(scheduler.WorkerUp{Worker: "w", Streams: 1, Threads: 1, Ops: []string{"blur"}})

	bad := newJobRun("j-bad", api.JobSpec{Op: "blur", Policy: "dynamic"}, 3, time.Now())
	bad.input, bad.params = []byte("x"), ops.Params{"sigma": "2." + strings.Repeat("0", 70_000)}
	s.addVisible(bad)
	d.addJob(bad)
	if bad.end != api.JobFailed {
		t.Fatalf("job with an unsendable unit: end %q, want failed", bad.end)
	}
	s.db.Flush()
	st := bad.summary()
	if st.State != api.JobFailed || !strings.Contains(st.Error, "could not be sent") || !strings.Contains(st.Error, "param") {
		t.Errorf("job status %s %q: want failed, saying the unit could not be sent and why", st.State, st.Error)
	}
	if n := unitsQueued(queue); n != 0 {
		t.Errorf("%d units queued for a unit that could not be encoded", n)
	}
	good := newJobRun("j-good", api.JobSpec{Op: "blur", Policy: "dynamic"}, 1, time.Now())
	good.input = []byte("x")
	s.addVisible(good)
	d.addJob(good)
	if n := unitsQueued(queue); n != 1 {
		t.Fatalf("the next job's unit was not sent (%d queued): the failed unit still holds the window", n)
	}
}

// unitsQueued drains a stream's send queue and counts the units in it
// (stream 0 also carries wants).
func unitsQueued(q chan []byte) int {
	n := 0
	for {
		select {
		case msg := <-q:
			if wire.KindOf(msg) == wire.KindUnit {
				n++
			}
		default:
			return n
		}
	}
}

// TestSubmitWhileLoopBusy: a submit whose request ends while the dispatch
// loop is busy must leave no job the scheduler runs but clients cannot
// see (nor the reverse). The old server answered 500, dropped the job from
// its map, and then ran it anyway.
func TestSubmitWhileLoopBusy(t *testing.T) {
	s := runTestServer(t, t.TempDir())
	info, err := s.store.PutBytes(context.Background(), []byte("input"))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	s.disp.post(func() { <-release }) // the loop is busy until released
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		body, _ := json.Marshal(api.JobSpec{Op: "noop", Input: info.ID, Repeat: 2})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/jobs", bytes.NewReader(body))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
	}
	time.Sleep(100 * time.Millisecond) // let the handlers see their requests end
	close(release)
	var inCore []string
	if err := s.disp.do(context.Background(), func() { inCore = s.disp.core.Jobs() }); err != nil {
		t.Fatal(err)
	}
	s.jobsMu.RLock()
	var visible []string
	for id := range s.jobs {
		visible = append(visible, id)
	}
	s.jobsMu.RUnlock()
	slices.Sort(inCore)
	slices.Sort(visible)
	if !slices.Equal(inCore, visible) {
		t.Fatalf("the scheduler holds jobs %v, clients see %v", inCore, visible)
	}
}

// TestResumeAssemblesFinishedUnits: a job whose units were all done and
// on disk, but which crashed before it was assembled, is assembled at the
// next start without running anything.
func TestResumeAssemblesFinishedUnits(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, dir)
	in, _ := s.store.PutBytes(context.Background(), []byte("input"))
	const n = 5
	rec := statedb.Job{ID: "j-crashed", Spec: api.JobSpec{Op: "noop", Input: in.ID, Repeat: n, Policy: "dynamic"},
		State: api.JobRunning, ReceivedAt: time.Now(), Progress: api.Progress{Total: n, Pending: n}}
	outs := make([]string, n)
	puts := []statedb.Change{statedb.PutJob(rec)}
	for i := range n {
		info, err := s.store.PutBytes(context.Background(), []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = info.ID
		u := statedb.Unit{State: statedb.UnitDone, Attempts: 1, Sent: 1, Returned: 2, Output: statedb.ParseID(info.ID)}
		puts = append(puts, statedb.PutUnit(rec.ID, i, u, "w", ""))
	}
	if err := s.db.Sync(statedb.Batch(puts...)); err != nil {
		t.Fatal(err)
	}
	s.ln.Close()
	s.db.Close()

	s2 := runTestServer(t, dir)
	deadline := time.Now().Add(60 * time.Second) // only a hang takes more than a moment
	j := s2.job(rec.ID)
	for ; j == nil && time.Now().Before(deadline); j = s2.job(rec.ID) {
		time.Sleep(10 * time.Millisecond)
	}
	if j == nil {
		t.Fatal("job not resumed")
	}
	for !j.finished() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := j.summary()
	if st.State != api.JobDone || st.Progress.Done != n {
		t.Fatalf("resumed job: %s %+v %s", st.State, st.Progress, st.Error)
	}
	b, err := store.ReadAll(context.Background(), s2.store, st.Result, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var m api.Manifest
	if err := json.Unmarshal(b, &m); err != nil || len(m.Units) != n {
		t.Fatalf("manifest: %v %s", err, b)
	}
	for i, mu := range m.Units {
		if mu.Index != i || mu.Output != outs[i] {
			t.Errorf("manifest unit %d: %+v, want output %s", i, mu, outs[i])
		}
	}
}

// TestMigrateSchema1: a data directory written before the schema was
// versioned (job records with every unit inside) is converted at the first
// start: its objects count as uploaded, and its jobs keep their units.
func TestMigrateSchema1(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, dir)
	old, _ := s.store.PutBytes(context.Background(), []byte("object from before"))
	out, _ := s.store.PutBytes(context.Background(), []byte("an output"))
	now := time.Now().UTC().Round(0)
	v1 := api.Job{ID: "j-old", Spec: api.JobSpec{Op: "noop", Input: old.ID, Repeat: 2}, State: api.JobDone,
		Result: out.ID, ReceivedAt: now, FinishedAt: &now, Progress: api.Progress{Total: 2, Done: 2},
		UnitsPerWorker: map[string]int{"w1": 2},
		Units: []api.UnitStat{
			{Index: 0, State: "done", Worker: "w1", Attempts: 1, Sent: &now, Returned: &now, ComputeMS: 1.5, Output: out.ID},
			{Index: 1, State: "done", Worker: "w1", Attempts: 2, Sent: &now, Returned: &now, ComputeMS: 2, Output: out.ID},
		}}
	s.ln.Close()
	s.db.Close()
	// Rewrite state.db as a build before schema versions left it.
	db, err := bolt.Open(filepath.Join(dir, "state.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range []string{"meta", "units", "uploads"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		v, _ := json.Marshal(v1)
		return tx.Bucket([]byte("jobs")).Put([]byte(v1.ID), v)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	s2 := newTestServer(t, dir)
	if s2.db.Schema() != 0 {
		t.Errorf("schema found %d, want 0 (none recorded)", s2.db.Schema())
	}
	for _, id := range []string{old.ID, out.ID} {
		if _, ok, err := s2.db.Upload(id); err != nil || !ok {
			t.Errorf("object %s from before the migration is not marked uploaded (%v)", id, err)
		}
	}
	if err := s2.resume(); err != nil {
		t.Fatal(err)
	}
	j := s2.job("j-old")
	st := j.snapshot()
	st.Units, err = s2.unitStats(context.Background(), j, 0, 2)
	if err != nil || st.State != api.JobDone || len(st.Units) != 2 || st.Units[1].Attempts != 2 ||
		st.Units[0].Worker != "w1" || st.Units[1].ComputeMS != 2 || st.Units[0].Output != out.ID || st.UnitsPerWorker["w1"] != 2 {
		t.Errorf("migrated job: %+v %v", st, err)
	}
	s2.ln.Close()
	s2.db.Close()
	s3 := newTestServer(t, dir)
	if s3.db.Schema() != statedb.SchemaVersion {
		t.Errorf("schema after migration: %d, want %d", s3.db.Schema(), statedb.SchemaVersion)
	}
}

// readerFromWriter is a ResponseWriter with a ReadFrom, as net/http's
// (whose ReadFrom is sendfile), that counts its calls.
type readerFromWriter struct {
	http.ResponseWriter
	buf   bytes.Buffer
	calls int
}

func (w *readerFromWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *readerFromWriter) ReadFrom(r io.Reader) (int64, error) {
	w.calls++
	return w.buf.ReadFrom(r)
}

// plainWriter is a ResponseWriter without ReadFrom.
type plainWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *plainWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

// io.Copy to the logErrors wrapper reaches the inner writer's ReadFrom
// (sendfile for object downloads), and still copies to one without.
func TestErrorRecorderReadFrom(t *testing.T) {
	body := strings.Repeat("object bytes ", 10000)
	src := func() io.Reader { return struct{ io.Reader }{strings.NewReader(body)} } // no WriteTo, as a file's to a non-socket
	inner := &readerFromWriter{}
	if _, err := io.Copy(&errorRecorder{ResponseWriter: inner}, src()); err != nil || inner.calls != 1 || inner.buf.String() != body {
		t.Errorf("copy to a writer with ReadFrom: %v, %d ReadFrom calls, %d bytes; want 1 call and %d bytes", err, inner.calls, inner.buf.Len(), len(body))
	}
	plain := &plainWriter{}
	if _, err := io.Copy(&errorRecorder{ResponseWriter: plain}, src()); err != nil || plain.buf.String() != body {
		t.Errorf("copy to a writer without ReadFrom: %v, %d bytes; want %d", err, plain.buf.Len(), len(body))
	}
}

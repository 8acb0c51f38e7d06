package statedb

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	bolt "go.etcd.io/bbolt"
)

// openTest opens a database in dir, closed when the test ends unless the
// test closes it first (close is then a no-op).
func openTest(t *testing.T, dir string) (db *DB, closeDB func()) {
	t.Helper()
	db, err := Open(filepath.Join(dir, "state.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closeDB = func() {
		if !closed {
			closed = true
			db.Close()
		}
	}
	t.Cleanup(closeDB)
	return db, closeDB
}

// TestOpenTakesAnEpoch: the server id outlives a restart, each open has
// a new epoch, a new database is at SchemaVersion after Migrate, and a
// second Open of the same file fails while the first holds it.
func TestOpenTakesAnEpoch(t *testing.T) {
	dir := t.TempDir()
	db, closeDB := openTest(t, dir)
	id, epoch := db.ID(), db.Epoch()
	if len(id) != 32 || epoch != 1 || db.Schema() != 0 {
		t.Fatalf("new database: id %q, epoch %d, schema %d; want 32 hex digits, 1, 0", id, epoch, db.Schema())
	}
	if err := db.Migrate(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(dir, "state.db"), slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Errorf("second open: %v, want an error that says another server may hold it", err)
	}
	closeDB()
	db2, _ := openTest(t, dir)
	if db2.ID() != id || db2.Epoch() != epoch+1 || db2.Schema() != SchemaVersion {
		t.Errorf("reopened: id %q epoch %d schema %d; want %q, %d, %d", db2.ID(), db2.Epoch(), db2.Schema(), id, epoch+1, SchemaVersion)
	}
}

// TestRecordsRoundTrip: jobs, uploads, tokens and operations read back
// as written; Then runs after the commit; a change after Close gets
// ErrClosed.
func TestRecordsRoundTrip(t *testing.T) {
	db, closeDB := openTest(t, t.TempDir())
	now := time.Now().UTC().Round(0)
	early, late := Job{ID: "j-1", State: api.JobDone, ReceivedAt: now}, Job{ID: "j-0", State: api.JobQueued, ReceivedAt: now.Add(time.Second)}
	committed := make(chan error, 1)
	db.Queue(PutJob(late).Then(func(err error) { committed <- err }))
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	err := db.Sync(Batch(PutJob(early), PutUpload(strings.Repeat("a", 64), now, "tok1"),
		PutToken("tok1", map[string]string{"id": "tok1"}), PutOp("blur2", 1, map[string]int{"v": 1}), PutOp("blur2", 2, map[string]int{"v": 2})))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := db.Jobs()
	if err != nil || len(jobs) != 2 || jobs[0].ID != "j-1" || jobs[1].ID != "j-0" {
		t.Errorf("jobs %+v, %v; want j-1 then j-0 (by receipt)", jobs, err)
	}
	up, ok, err := db.Upload(strings.Repeat("a", 64))
	if err != nil || !ok || !up.At.Equal(now) || up.Owner != "tok1" {
		t.Errorf("upload: %+v %v %v", up, ok, err)
	}
	if _, ok, _ := db.Upload(strings.Repeat("b", 64)); ok {
		t.Error("an object nobody uploaded has an upload record")
	}
	var toks []string
	_ = db.Tokens(func(id string, rec []byte) error { toks = append(toks, id+" "+string(rec)); return nil })
	if !slices.Equal(toks, []string{`tok1 {"id":"tok1"}`}) {
		t.Errorf("tokens %q", toks)
	}
	var ops []string
	_ = db.Ops(func(_, rec []byte) error { ops = append(ops, string(rec)); return nil })
	if !slices.Equal(ops, []string{`{"v":1}`, `{"v":2}`}) {
		t.Errorf("operations %q, want both versions in order", ops)
	}
	if err := db.Sync(Batch(DeleteToken("tok1"), DeleteUpload(strings.Repeat("a", 64)))); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Upload(strings.Repeat("a", 64)); ok {
		t.Error("a deleted upload is still on record")
	}
	closeDB()
	if err := db.Sync(PutJob(early)); !errors.Is(err, ErrClosed) {
		t.Errorf("a change after Close: %v, want ErrClosed", err)
	}
}

// TestUnitRecordRoundTrip: a unit record decodes to what was encoded, and
// deleting a job removes every one of its unit records and no other.
func TestUnitRecordRoundTrip(t *testing.T) {
	u := Unit{Sent: 1, Returned: 2, Queued: 3, Compute: 4, Output: ParseID(strings.Repeat("ab", 32)),
		Stream: 7, Attempts: 3, State: UnitFailed}
	got, worker, errText, err := decodeUnitRec(u.encode(nil, "worker-1", "it broke"))
	if err != nil || got != u || worker != "worker-1" || errText != "it broke" {
		t.Fatalf("decode(encode) = %+v %q %q %v", got, worker, errText, err)
	}
	for _, b := range [][]byte{nil, {9}, u.encode(nil, "w", "e")[:50]} {
		if _, _, _, err := decodeUnitRec(b); err == nil {
			t.Errorf("decoded a bad record %x", b)
		}
	}
	db, _ := openTest(t, t.TempDir())
	var puts []Change
	for _, job := range []string{"j-a", "j-ab", "j-b"} {
		for i := range 300 {
			puts = append(puts, PutUnit(job, i, u, "w", ""))
		}
	}
	err = db.Sync(Batch(puts...))
	if err == nil {
		err = db.Sync(DeleteJob("j-a"))
	}
	if err != nil {
		t.Fatal(err)
	}
	for job, want := range map[string]int{"j-a": 0, "j-ab": 300, "j-b": 300} {
		if got, err := db.UnitsRange(job, 0, math.MaxInt32); err != nil || len(got) != want {
			t.Errorf("job %s: %d unit records (%v), want %d", job, len(got), err, want)
		}
	}
	stats, err := db.UnitStats("j-b", 0, 302)
	if err != nil || len(stats) != 302 || stats[7].State != "failed" || stats[7].Worker != "w" || stats[7].Attempts != 3 || stats[301].State != "pending" {
		t.Errorf("unit stats: %d, %v; want 302, unit 7 failed on w after 3 attempts, unit 301 pending", len(stats), err)
	}
}

// TestMigrateSchema1: a database of schema 1 (job records with every unit
// inside, no uploads) becomes the current schema: the objects given count as
// uploaded, each job keeps its accepted units as unit records.
func TestMigrateSchema1(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC().Round(0)
	out := strings.Repeat("c", 64)
	v1 := api.Job{ID: "j-old", Spec: api.JobSpec{Op: "noop", Input: out, Repeat: 3}, State: api.JobDone,
		Result: out, ReceivedAt: now, FinishedAt: &now, Progress: api.Progress{Total: 3, Done: 2, Failed: 1},
		UnitsPerWorker: map[string]int{"w1": 2},
		Units: []api.UnitStat{
			{Index: 0, State: "done", Worker: "w1", Attempts: 1, Sent: &now, Returned: &now, ComputeMS: 1.5, Output: out},
			{Index: 1, State: "failed", Worker: "w1", Attempts: 2, Error: "no", Returned: &now},
			{Index: 2, State: "pending"},
		}}
	writeV1(t, filepath.Join(dir, "state.db"), v1)
	db, _ := openTest(t, dir)
	if db.Schema() != 0 {
		t.Fatalf("schema %d, want 0 (none recorded)", db.Schema())
	}
	if err := db.Migrate([]string{out}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Upload(out); !ok {
		t.Error("an object from before the migration is not marked uploaded")
	}
	jobs, err := db.Jobs()
	if err != nil || len(jobs) != 1 || jobs[0].Result != out || jobs[0].PerWorker["w1"] != 2 || jobs[0].LastResult == nil {
		t.Fatalf("jobs after migration: %+v %v", jobs, err)
	}
	units, err := db.UnitsRange("j-old", 0, math.MaxInt32)
	if err != nil || len(units) != 2 || units[0].Rec.State != UnitDone || units[0].Rec.Compute != int64(1.5*float64(time.Millisecond)) ||
		units[1].Rec.State != UnitFailed || units[1].ErrText != "no" || units[1].Rec.Attempts != 2 {
		t.Errorf("units after migration: %+v %v; want unit 0 done, unit 1 failed, no pending one", units, err)
	}
}

// writeV1 makes a state.db as a build before schema versions wrote it:
// a jobs bucket of api.Job with units, and nothing else.
func writeV1(t *testing.T, path string, jobs ...api.Job) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(jobsBucket)
		for _, j := range jobs {
			v, _ := json.Marshal(j)
			if err == nil {
				err = b.Put([]byte(j.ID), v)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDropRefs: the objects uploads, job records and done units name
// leave the candidates; others stay.
func TestDropRefs(t *testing.T) {
	db, _ := openTest(t, t.TempDir())
	id := func(c string) string { return strings.Repeat(c, 64) }
	err := db.Sync(Batch(PutUpload(id("1"), time.Now(), ""),
		PutJob(Job{ID: "j-x", Spec: api.JobSpec{Input: id("2")}, Result: id("3")}),
		PutUnit("j-x", 0, Unit{State: UnitDone, Output: ParseID(id("4"))}, "w", ""),
		PutUnit("j-x", 1, Unit{State: UnitFailed, Output: ParseID(id("5"))}, "w", "no")))
	if err != nil {
		t.Fatal(err)
	}
	cands := map[[32]byte]bool{}
	for _, c := range "123456" {
		cands[ParseID(id(string(c)))] = true
	}
	if err := db.DropRefs(cands); err != nil {
		t.Fatal(err)
	}
	var left []string
	for k := range cands {
		left = append(left, HexID(k)[:1])
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"5", "6"}) {
		t.Errorf("candidates left %v, want 5 (a failed unit's) and 6 (unnamed)", left)
	}
}

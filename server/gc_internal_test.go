package server

import (
	"context"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
)

// TestCollectorKeepsAssembledResult: a job's result, stored by assembly
// but not yet on record (the loop has not run finish, or the record's
// commit is slow), is neither collected nor deletable, however long that
// takes. The test is the dispatch loop: it holds the job's finish, the
// step between the result's Put and its record, past the grace period,
// and collects then. (TestCollector lost a retained job's result so on a
// loaded machine.)
func TestCollectorKeepsAssembledResult(t *testing.T) {
	ctx := context.Background()
	s := newTestServer(t, t.TempDir())
	const grace = 50 * time.Millisecond
	s.cfg.GCGrace = grace // no janitor runs: collect is called below
	in, err := s.store.PutBytes(ctx, []byte("input"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	rec := statedb.Job{ID: "j-assembling", Spec: api.JobSpec{Op: "noop", Input: in.ID, Repeat: n, Policy: "dynamic"},
		State: api.JobRunning, ReceivedAt: time.Now(), Progress: api.Progress{Total: n, Pending: n}}
	known := map[string]bool{in.ID: true}
	puts := []statedb.Change{statedb.PutJob(rec)}
	for i := range n {
		info, err := s.store.PutBytes(ctx, []byte{byte(i)})
		if err != nil {
			t.Fatal(err)
		}
		known[info.ID] = true
		u := statedb.Unit{State: statedb.UnitDone, Attempts: 1, Sent: 1, Returned: 2, Output: statedb.ParseID(info.ID)}
		puts = append(puts, statedb.PutUnit(rec.ID, i, u, "w", ""))
	}
	if err := s.db.Sync(statedb.Batch(puts...)); err != nil {
		t.Fatal(err)
	}

	// Resume the job: addJob finds its units done and starts assembly,
	// which stores the result and posts finish to the loop.
	if err := s.resume(); err != nil {
		t.Fatal(err)
	}
	j := s.job(rec.ID)
	if j == nil {
		t.Fatal("job not resumed")
	}
	runPosted(t, s.disp) // addJob
	finish := nextPosted(t, s.disp)

	result := waitForNewObject(t, s.store, known, grace)
	s.collect(ctx)
	if _, err := s.store.Stat(ctx, result); err != nil {
		t.Errorf("the result of a job finishing was collected: %v", err)
	}
	if job, how := s.activeUser(result); job != rec.ID {
		t.Errorf("activeUser(result) = %q %q: a DELETE would remove the result of a job finishing", job, how)
	}

	finish()
	deadline := time.Now().Add(30 * time.Second)
	for !j.finished() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := j.summary(); st.State != api.JobDone || st.Result != result {
		t.Fatalf("job: %s result %s (%s), want done with %s", st.State, st.Result, st.Error, result)
	}
	if _, err := store.ReadAll(ctx, s.store, result, 1<<20); err != nil {
		t.Errorf("reading the finished job's result: %v", err)
	}
}

// nextPosted takes the next function posted to d's loop, which no loop
// runs in the test, without running it.
func nextPosted(t *testing.T, d *dispatcher) func() {
	t.Helper()
	select {
	case f := <-d.ctl:
		return f
	case <-time.After(30 * time.Second):
		t.Fatal("nothing posted to the loop")
		return nil
	}
}

// runPosted runs the next function posted to d's loop.
func runPosted(t *testing.T, d *dispatcher) { nextPosted(t, d)() }

// waitForNewObject waits for st to hold exactly one object not in known,
// stored more than age ago, and returns its id.
func waitForNewObject(t *testing.T, st store.Store, known map[string]bool, age time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		objs, err := st.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var fresh []store.Info
		for _, o := range objs {
			if !known[o.ID] {
				fresh = append(fresh, o)
			}
		}
		if len(fresh) > 1 {
			t.Fatalf("%d new objects, want one (the result): %v", len(fresh), fresh)
		}
		if len(fresh) == 1 && fresh[0].Created.Before(time.Now().Add(-age)) {
			return fresh[0].ID
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no result stored")
	return ""
}

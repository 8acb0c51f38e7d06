package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/server"
)

// del sends DELETE path and returns the status and the error code.
func del(t *testing.T, c *client.Client, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodDelete, c.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	return resp.StatusCode, eb.Error.Code
}

func objectID(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func jobIDs(t *testing.T, c *client.Client) []string {
	t.Helper()
	jobs, err := c.Jobs(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	slices.Sort(ids)
	return ids
}

func objectIDs(t *testing.T, c *client.Client) map[string]bool {
	t.Helper()
	objs, err := c.Objects(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, o := range objs {
		out[o.ID] = true
	}
	return out
}

// TestRetentionByCount: past RetainJobs finished jobs the oldest go, with
// their unit records, and stay gone after a restart; unfinished jobs are
// not counted.
func TestRetentionByCount(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	r := runServer(t, server.Config{DataDir: dir, RetainJobs: 3})
	startFakeWorker(t, r.c, testSecret, "fake", 2, time.Millisecond)
	in := put(t, r.c, []byte("input"))
	var ids []string
	for range 5 {
		j := runJob(t, r.c, api.JobSpec{Op: "noop", Input: in, Repeat: 4})
		ids = append(ids, j.ID)
	}
	want := slices.Sorted(slices.Values(ids[2:]))
	waitFor(ctx, t, "retention to remove the two oldest jobs", func() bool { return slices.Equal(jobIDs(t, r.c), want) })
	for _, id := range ids[:2] {
		if _, err := r.c.Job(ctx, id, true); apiCode(err) != api.CodeNotFound {
			t.Errorf("job %s past retention: %v, want %s", id, err, api.CodeNotFound)
		}
	}
	r.stop(t)
	r2 := runServer(t, server.Config{DataDir: dir, RetainJobs: 3})
	if got := jobIDs(t, r2.c); !slices.Equal(got, want) {
		t.Errorf("after restart jobs %v, want %v", got, want)
	}
	for _, id := range want {
		if j, err := r2.c.Job(ctx, id, true); err != nil || len(j.Units) != 4 || unitsByState(j)["done"] != 4 {
			t.Errorf("retained job %s after restart: %v, units %v", id, err, unitsByState(j))
		}
	}
}

// TestRetentionByAge: a finished job goes RetainFor after it finished; a
// job still running stays however old.
func TestRetentionByAge(t *testing.T) {
	ctx := testCtx(t)
	r := runServer(t, server.Config{DataDir: t.TempDir(), RetainFor: 300 * time.Millisecond})
	fw := startFakeWorker(t, r.c, testSecret, "fake", 1, time.Millisecond)
	in := put(t, r.c, []byte("input"))
	done := runJob(t, r.c, api.JobSpec{Op: "noop", Input: in})
	fw.stop()
	waiting, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the finished job to expire", func() bool {
		_, err := r.c.Job(ctx, done.ID, false)
		return apiCode(err) == api.CodeNotFound
	})
	if age := time.Since(*done.FinishedAt); age < 300*time.Millisecond {
		t.Errorf("job removed %v after it finished, before RetainFor", age)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := r.c.Job(ctx, waiting.ID, false); err != nil {
		t.Errorf("an unfinished job was removed: %v", err)
	}
}

// TestDeleteJob: DELETE /v1/jobs/{id} removes a finished job (204), refuses
// one that is not finished (409 conflict), and knows no unknown job (404).
func TestDeleteJob(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	r := runServer(t, server.Config{DataDir: dir})
	in := put(t, r.c, []byte("input"))
	j, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 3}) // no worker: it waits
	if err != nil {
		t.Fatal(err)
	}
	if code, ecode := del(t, r.c, "/v1/jobs/"+j.ID); code != http.StatusConflict || ecode != api.CodeConflict {
		t.Errorf("DELETE of a queued job: %d %s, want 409 %s", code, ecode, api.CodeConflict)
	}
	if _, err := r.c.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := del(t, r.c, "/v1/jobs/"+j.ID); code != http.StatusNoContent {
		t.Errorf("DELETE of a cancelled job: %d, want 204", code)
	}
	if code, ecode := del(t, r.c, "/v1/jobs/"+j.ID); code != http.StatusNotFound || ecode != api.CodeNotFound {
		t.Errorf("second DELETE: %d %s, want 404 %s", code, ecode, api.CodeNotFound)
	}
	if _, err := r.c.Job(ctx, j.ID, false); apiCode(err) != api.CodeNotFound {
		t.Errorf("GET of a deleted job: %v", err)
	}
	r.stop(t)
	r2 := runServer(t, server.Config{DataDir: dir})
	if _, err := r2.c.Job(ctx, j.ID, false); apiCode(err) != api.CodeNotFound {
		t.Errorf("GET of a deleted job after restart: %v", err)
	}
}

// TestDeleteObject: DELETE /v1/objects/{id} removes an object (204) unless
// a job that is not finished reads it or produced it (409), and knows no
// missing object (404 object_not_found).
func TestDeleteObject(t *testing.T) {
	ctx := testCtx(t)
	r := runServer(t, server.Config{DataDir: t.TempDir()})
	fw := startFakeWorker(t, r.c, testSecret, "slow", 1, 150*time.Millisecond)
	in := put(t, r.c, []byte("input"))
	no := false
	j, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 50, Speculate: &no})
	if err != nil {
		t.Fatal(err)
	}
	if code, ecode := del(t, r.c, "/v1/objects/"+in); code != http.StatusConflict || ecode != api.CodeConflict {
		t.Errorf("DELETE of a running job's input: %d %s, want 409 %s", code, ecode, api.CodeConflict)
	}
	waitFor(ctx, t, "a first result", func() bool {
		s, err := r.c.Job(ctx, j.ID, false)
		return err == nil && s.Progress.Done > 0
	})
	out := objectID(fakeOutput(j.ID, 0))
	if code, ecode := del(t, r.c, "/v1/objects/"+out); code != http.StatusConflict || ecode != api.CodeConflict {
		t.Errorf("DELETE of a running job's output: %d %s, want 409 %s", code, ecode, api.CodeConflict)
	}
	if _, err := r.c.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	fw.stop()
	for _, id := range []string{in, out} {
		if code, _ := del(t, r.c, "/v1/objects/"+id); code != http.StatusNoContent {
			t.Errorf("DELETE of %s once the job is cancelled: %d, want 204", id, code)
		}
		if code, ecode := del(t, r.c, "/v1/objects/"+id); code != http.StatusNotFound || ecode != api.CodeNoObject {
			t.Errorf("second DELETE of %s: %d %s, want 404 %s", id, code, ecode, api.CodeNoObject)
		}
	}
	if _, err := r.c.GetBytes(ctx, in); apiCode(err) != api.CodeNoObject {
		t.Errorf("GET of a deleted object: %v", err)
	}
	if code, ecode := del(t, r.c, "/v1/objects/not-an-id"); code != http.StatusBadRequest || ecode != api.CodeBadRequest {
		t.Errorf("DELETE of a malformed id: %d %s", code, ecode)
	}
	if _, err := r.c.Submit(ctx, api.JobSpec{Op: "noop", Input: in}); apiCode(err) != api.CodeNoObject {
		t.Errorf("submit naming a deleted object: %v", err)
	}
}

// TestCollector: the outputs and result of a job removed by retention are
// deleted once unreferenced past GCGrace; a retained job's stay, and so do
// objects clients uploaded, referenced or not.
func TestCollector(t *testing.T) {
	ctx := testCtx(t)
	r := runServer(t, server.Config{DataDir: t.TempDir(), RetainJobs: 1, GCGrace: 300 * time.Millisecond})
	startFakeWorker(t, r.c, testSecret, "fake", 2, time.Millisecond)
	in := put(t, r.c, []byte("input"))
	spare := put(t, r.c, []byte("uploaded, never used"))
	first := runJob(t, r.c, api.JobSpec{Op: "noop", Input: in, Repeat: 3})
	second := runJob(t, r.c, api.JobSpec{Op: "noop", Input: in, Repeat: 3})
	gone := []string{first.Result}
	kept := []string{in, spare, second.Result}
	for i := range 3 {
		gone = append(gone, objectID(fakeOutput(first.ID, i)))
		kept = append(kept, objectID(fakeOutput(second.ID, i)))
	}
	waitFor(ctx, t, "the first job's objects to be collected", func() bool {
		objs := objectIDs(t, r.c)
		for _, id := range gone {
			if objs[id] {
				return false
			}
		}
		return true
	})
	objs := objectIDs(t, r.c)
	for _, id := range kept {
		if !objs[id] {
			t.Errorf("object %s was collected, but a retained job or a client owns it", id)
		}
	}
	if _, err := r.c.GetBytes(ctx, second.Result); err != nil {
		t.Errorf("retained job's result: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // a few more collections
	if objs := objectIDs(t, r.c); !objs[spare] || !objs[in] {
		t.Errorf("uploaded objects were collected: %v", objs)
	}
}

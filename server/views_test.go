package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
)

// TestPagesAnswerWhileLoopBusy: the list pages the dashboard polls
// (GET /v1/workers, GET /v1/jobs) and a job's status answer while the
// dispatch loop is held busy, as it is placing units during a big job,
// and keep their order, cursors and 404 for a job cursor that is gone.
// The old server answered them on the loop: they waited until it was
// free.
func TestPagesAnswerWhileLoopBusy(t *testing.T) {
	s := runTestServer(t, t.TempDir())
	for _, name := range []string{"w2", "w0", "w1"} {
		info := api.WorkerInfo{Name: name, MaxThreads: 1, Ops: []string{"noop"},
			// A transport the server has not: the worker stays connecting.
			Endpoints: []api.Endpoint{{Transport: "tcp", Addr: "127.0.0.1:1"}}}
		call(t, s, http.MethodPost, "/v1/workers", info, 200, nil)
	}
	in, err := s.store.PutBytes(context.Background(), []byte("input"))
	if err != nil {
		t.Fatal(err)
	}
	var job api.Job
	call(t, s, http.MethodPost, "/v1/jobs", api.JobSpec{Op: "noop", Input: in.ID, Repeat: 3}, 201, &job)

	held, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	s.disp.post(func() { close(held); <-release })
	<-held // the loop is busy until the test ends

	var first, second []api.Worker
	link := call(t, s, http.MethodGet, "/v1/workers?limit=2", nil, 200, &first)
	if len(first) != 2 || first[0].Info.Name != "w0" || first[1].Info.Name != "w1" ||
		link != `</v1/workers?after=w1&limit=2>; rel="next"` {
		t.Fatalf("first page: %+v, Link %q", first, link)
	}
	if link := call(t, s, http.MethodGet, "/v1/workers?after=w1&limit=2", nil, 200, &second); len(second) != 1 ||
		second[0].Info.Name != "w2" || second[0].State != api.WorkerConnecting || link != "" {
		t.Fatalf("second page: %+v, Link %q", second, link)
	}
	// A heartbeat, answered beside the loop, shows in last_seen at once.
	call(t, s, http.MethodPost, "/v1/workers/w2/heartbeat", nil, 200, nil)
	var third []api.Worker
	if call(t, s, http.MethodGet, "/v1/workers?after=w1", nil, 200, &third); len(third) != 1 || !third[0].LastSeen.After(second[0].LastSeen) {
		t.Fatalf("after a heartbeat: %+v, last seen before %v", third, second[0].LastSeen)
	}
	var jobs []api.Job
	call(t, s, http.MethodGet, "/v1/jobs", nil, 200, &jobs)
	if len(jobs) != 1 || jobs[0].ID != job.ID || jobs[0].Progress.Total != 3 {
		t.Fatalf("jobs: %+v", jobs)
	}
	call(t, s, http.MethodGet, "/v1/jobs?after=j-gone", nil, 404, nil)
	var got api.Job
	call(t, s, http.MethodGet, "/v1/jobs/"+job.ID+"?units=0", nil, 200, &got)
	if got.ID != job.ID || got.Progress.Running != 0 {
		t.Fatalf("job status: %+v", got)
	}
}

// callTimeout bounds one API call of a test: far more than a call to a
// server that answers takes on a loaded machine, so that a call waiting
// for a held dispatch loop fails the test instead of hanging it.
const callTimeout = 30 * time.Second

// call makes one API call to s with the worker token, wants the status,
// decodes the answer into out (if not nil), and returns the Link header.
func call(t *testing.T, s *Server, method, path string, body any, want int, out any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var rd bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd.Reset(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+path, &rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.WorkerTokenHeader, api.WorkerToken(s.cfg.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v (no answer within %v)", method, path, err, callTimeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s, want %d", method, path, resp.Status, want)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(fmt.Errorf("%s %s: %w", method, path, err))
		}
	}
	return resp.Header.Get("Link")
}

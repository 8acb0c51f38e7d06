package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/server"
)

// getPage GETs a path of the server's API as a client that knows nothing
// of paging would, and returns the decoded body and the Link header.
func getPage[T any](t *testing.T, base, path string) (T, string) {
	t.Helper()
	var out T
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return out, resp.Header.Get("Link")
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWorkersPaged: the worker list comes a page at a time, by name, each
// page naming the next in a Link header; the client follows them all.
func TestWorkersPaged(t *testing.T) {
	c, _ := startRegistry(t, server.Config{HeartbeatTimeout: time.Hour})
	var names []string
	for i := range 25 {
		info := process(fmt.Sprintf("w%02d", 24-i), uint64(i+1), "1")
		if _, err := c.RegisterWorker(testCtx(t), info); err != nil {
			t.Fatal(err)
		}
		names = append(names, info.Name)
	}
	slices.Sort(names)
	page, link := getPage[[]api.Worker](t, c.URL(), "/v1/workers?limit=10")
	if len(page) != 10 || page[0].Info.Name != "w00" || link != `</v1/workers?after=w09&limit=10>; rel="next"` {
		t.Fatalf("first page: %d workers from %q, Link %q", len(page), page[0].Info.Name, link)
	}
	var got []string
	for path := "/v1/workers?limit=10"; path != ""; {
		page, link := getPage[[]api.Worker](t, c.URL(), path)
		for _, w := range page {
			got = append(got, w.Info.Name)
		}
		path = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	}
	all, err := c.Workers(testCtx(t))
	if err != nil || !slices.Equal(got, names) || len(all) != 25 || all[24].Info.Name != "w24" {
		t.Errorf("pages gave %v; the client %d workers (%v); want %v", got, len(all), err, names)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x"} {
		if code := status(t, c.URL()+"/v1/workers?"+q); code != 400 {
			t.Errorf("?%s: %d, want 400", q, code)
		}
	}
}

// TestJobsObjectsAndUnitsPaged: the job and object lists, and a job's
// units, come a page at a time as the workers do; the client follows the
// pages.
func TestJobsObjectsAndUnitsPaged(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2})
	c := cl.Client
	in := put(t, c, []byte("paged input"))
	var ids []string
	for range 5 {
		j := runJob(t, c, api.JobSpec{Op: "noop", Input: in, Repeat: 7})
		ids = append(ids, j.ID)
	}
	var got []string
	for path := "/v1/jobs?limit=2"; path != ""; {
		page, link := getPage[[]api.Job](t, c.URL(), path)
		if len(page) > 2 {
			t.Fatalf("%s: %d jobs", path, len(page))
		}
		for _, j := range page {
			got = append(got, j.ID)
		}
		path = strings.TrimSuffix(strings.TrimPrefix(link, "<"), `>; rel="next"`)
	}
	jobs, err := c.Jobs(testCtx(t))
	if err != nil || !slices.Equal(got, ids) || len(jobs) != 5 {
		t.Errorf("pages of jobs %v, client %d jobs (%v); want %v in the order submitted", got, len(jobs), err, ids)
	}
	for _, j := range jobs {
		if j.UnitsPerWorker != nil {
			t.Errorf("job %s in the list has units by worker %v: a page leaves them to the job's status", j.ID, j.UnitsPerWorker)
		}
	}
	if own, err := c.Job(testCtx(t), ids[0], false); err != nil || own.UnitsPerWorker["w1"] != 7 {
		t.Errorf("job %s's own status: units by worker %v (%v), want w1: 7", ids[0], own.UnitsPerWorker, err)
	}
	if code := status(t, c.URL()+"/v1/jobs?after=j-000000000000"); code != 404 {
		t.Errorf("jobs after an unknown job: %d, want 404", code)
	}

	for i := range 4 {
		put(t, c, []byte(fmt.Sprint("object ", i)))
	}
	objs, err := c.Objects(testCtx(t))
	page, link := getPage[[]api.Object](t, c.URL(), "/v1/objects?limit=3")
	if err != nil || len(objs) < 6 || len(page) != 3 || link != fmt.Sprintf(`</v1/objects?after=%s&limit=3>; rel="next"`, page[2].ID) {
		t.Errorf("objects: %d from the client (%v); a page of %d, Link %q", len(objs), err, len(page), link)
	}

	j, link := getPage[api.Job](t, c.URL(), "/v1/jobs/"+ids[0]+"?units=1&limit=3&after=1")
	if len(j.Units) != 3 || j.Units[0].Index != 2 || j.Units[2].State != "done" ||
		link != fmt.Sprintf(`</v1/jobs/%s?after=4&limit=3&units=1>; rel="next"`, ids[0]) {
		t.Errorf("units 2 to 4 of 7: %+v, Link %q", j.Units, link)
	}
	if _, link := getPage[api.Job](t, c.URL(), "/v1/jobs/"+ids[0]+"?units=1&limit=3&after=3"); link != "" {
		t.Errorf("the last page of units names a next one: %q", link)
	}
	whole, err := c.Job(testCtx(t), ids[0], true)
	if err != nil || len(whole.Units) != 7 || whole.Units[6].Index != 6 {
		t.Errorf("the client's job with units: %d units (%v)", len(whole.Units), err)
	}
	if code := status(t, c.URL()+"/v1/jobs/"+ids[0]+"?units=1&after=x"); code != 400 {
		t.Errorf("units after x: %d, want 400", code)
	}
}

// TestWorkersListCountsUnits: the workers list, read beside the dispatch
// loop, shows each worker's units done once a job is over (the counts are
// published a tick later at most), and none in flight.
func TestWorkersListCountsUnits(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2}, cluster.WorkerSpec{Threads: 2})
	c, ctx := cl.Client, testCtx(t)
	j := runJob(t, c, api.JobSpec{Op: "noop", Input: put(t, c, []byte("input")), Repeat: 30})
	if j.State != api.JobDone {
		t.Fatalf("job %+v", j)
	}
	var ws []api.Worker
	waitFor(ctx, t, "the list to show the units done", func() bool {
		var err error
		if ws, err = c.Workers(ctx); err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, w := range ws {
			if w.InFlightUnits != 0 || w.BusyThreads != 0 {
				return false
			}
			done += w.UnitsDone
		}
		return done == 30
	})
	for _, w := range ws {
		if w.UnitsDone != j.UnitsPerWorker[w.Info.Name] || w.State != api.WorkerUp {
			t.Errorf("worker %s: %d units done, %s; the job counts %d", w.Info.Name, w.UnitsDone, w.State, j.UnitsPerWorker[w.Info.Name])
		}
	}
}

package server_test

import (
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
)

// TestWorkersListCountsShortJobs: the workers list shows the units a
// worker did for jobs that start and end between two of the counts'
// passes. The counts pass skips a server with nothing running whose counts
// it showed already; a unit done since then must show it something
// changed (20 one-unit jobs left the list stale in 18 of 20 runs).
func TestWorkersListCountsShortJobs(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 1})
	c := cl.Client
	in := put(t, c, []byte("x"))
	const jobs = 20
	for range jobs {
		if j := runJob(t, c, api.JobSpec{Op: "noop", Input: in, Repeat: 1}); j.State != api.JobDone {
			t.Fatalf("job %+v", j)
		}
	}
	ctx := testCtx(t)
	deadline := time.Now().Add(30 * time.Second) // counts are published every tick or so
	for {
		ws, err := c.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) == 1 && ws[0].UnitsDone == jobs {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers list %+v 30 s after %d one-unit jobs; want %d units done", ws, jobs, jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

package server_test

import (
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// checkCounts checks the invariants api.Progress documents.
func checkCounts(t *testing.T, j api.Job) {
	t.Helper()
	p := j.Progress
	if j.Terminal() {
		if p.Sent != 0 || p.Running != 0 || p.Pending != 0 || p.Done+p.Failed+p.Cancelled != p.Total {
			t.Fatalf("%s job %+v: want nothing sent, running or pending, done+failed+cancelled = total", j.State, p)
		}
		return
	}
	if p.Cancelled != 0 || p.Running > p.Sent || p.Done+p.Failed+p.Sent+p.Pending != p.Total {
		t.Fatalf("%s job %+v: want running <= sent, done+failed+sent+pending = total", j.State, p)
	}
}

// TestRunningIsExecuting: while a job runs on one worker of 2 threads,
// running never exceeds the threads and counts no more than was sent, and
// the units queued at the worker (the scheduler keeps 2 per thread in
// flight) show as sent but not running.
func TestRunningIsExecuting(t *testing.T) {
	const threads = 2
	cl := startCluster(t, cluster.WorkerSpec{Threads: threads})
	c, ctx := cl.Client, testCtx(t)
	in := put(t, c, samples.PNG())
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: in, Repeat: 16, Params: map[string]string{"sigma": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	queued := false
	for !j.Terminal() {
		if j, err = c.Job(ctx, j.ID, false); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, j)
		if p := j.Progress; p.Running > threads {
			t.Fatalf("%d running on %d threads: %+v", p.Running, threads, p)
		} else if p.Running == threads && p.Sent > p.Running {
			queued = true
		}
		time.Sleep(20 * time.Millisecond)
	}
	if j.State != api.JobDone {
		t.Fatalf("job %s: %s", j.State, j.Error)
	}
	if !queued {
		t.Errorf("never saw %d running with more sent: running still counts every unit in flight?", threads)
	}
	if jobs, err := c.Jobs(ctx); err != nil || len(jobs) != 1 {
		t.Fatalf("jobs: %v %v", jobs, err)
	} else {
		checkCounts(t, jobs[0])
	}
}

// TestTerminalCounts: a failed job and a cancelled one show final counts
// (nothing running, sent or pending; the rest cancelled), in the answer to
// cancel, in status and in the list of jobs.
func TestTerminalCounts(t *testing.T) {
	cl := startCluster(t, cluster.WorkerSpec{Threads: 2})
	c, ctx := cl.Client, testCtx(t)
	gif := samples.GIF()
	broken := put(t, c, gif[:len(gif)/2]) // its header passes submit; a worker cannot decode it
	j := runJob(t, c, api.JobSpec{Op: "blur", Input: broken, Repeat: 500})
	if j.State != api.JobFailed || j.Progress.Failed < 1 || j.Progress.Cancelled < 400 {
		t.Fatalf("failed job: %s %+v, want failed with the units not run cancelled", j.State, j.Progress)
	}
	checkCounts(t, j)

	in := put(t, c, samples.PNG())
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: in, Repeat: 500, Params: map[string]string{"sigma": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if j, err = c.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	if j.State != api.JobCancelled || j.Progress.Cancelled == 0 {
		t.Fatalf("cancelled job: %s %+v", j.State, j.Progress)
	}
	checkCounts(t, j)
	jobs, err := c.Jobs(ctx)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs: %v %v", jobs, err)
	}
	for _, j := range jobs {
		checkCounts(t, j)
	}
}

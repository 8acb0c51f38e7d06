package server_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
	"github.com/braidhq/braid/server"
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
// flight, once it has measured the worker; a unit per thread and one more
// before) show as sent but not running. The worker is the fake one, which
// first holds the units it gets: those sent stay there, all but 2 queued,
// until the test has seen them so; then it answers them all.
func TestRunningIsExecuting(t *testing.T) {
	const threads = 2
	r := runServer(t, server.Config{DataDir: t.TempDir()})
	fw := startFakeWorker(t, r.c, testSecret, "held", threads, 10*time.Millisecond)
	release := fw.hold()
	defer release()
	c, ctx := r.c, testCtx(t)
	in := put(t, c, []byte("input"))
	j, err := c.Submit(ctx, api.JobSpec{Op: "noop", Input: in, Repeat: 16})
	if err != nil {
		t.Fatal(err)
	}
	// poll reads the job and checks the counts.
	poll := func() api.Progress {
		t.Helper()
		if j, err = c.Job(ctx, j.ID, false); err != nil {
			t.Fatal(err)
		}
		checkCounts(t, j)
		if p := j.Progress; p.Running > threads {
			t.Fatalf("%d running on %d threads: %+v", p.Running, threads, p)
		}
		return j.Progress
	}
	var held api.Progress
	waitFor(ctx, t, fmt.Sprintf("%d running with more sent", threads), func() bool {
		held = poll()
		return held.Running == threads && held.Sent > threads
	})
	// They are at the worker (or on their way to it).
	waitFor(ctx, t, fmt.Sprintf("the %d units sent to reach the worker", held.Sent), func() bool { return len(fw.received()) >= held.Sent })
	release()
	for !j.Terminal() {
		poll()
		time.Sleep(20 * time.Millisecond)
	}
	if j.State != api.JobDone {
		t.Fatalf("job %s: %s", j.State, j.Error)
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

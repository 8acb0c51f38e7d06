package server_test

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/ops/samples"
)

// TestFailuresAreLogged: a unit that fails, the job it fails, a cancelled
// job and a refused request each get one line with the job, unit and
// reason; a 409's message does not repeat its code.
func TestFailuresAreLogged(t *testing.T) {
	logs := &testlog.Buffer{}
	ctx := testCtx(t)
	cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), Logger: logs.Logger(slog.LevelInfo),
		Workers: []cluster.WorkerSpec{{Threads: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := cl.Client
	gif := samples.GIF()
	broken := put(t, c, gif[:len(gif)/2])
	failed := runJob(t, c, api.JobSpec{Op: "blur", Input: broken})
	in := put(t, c, samples.PNG())
	j, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: in, Repeat: 200, Params: map[string]string{"sigma": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Cancel(ctx, j.ID)
	if want := "conflict: job " + j.ID + " is already cancelled"; err == nil || err.Error() != want {
		t.Errorf("second cancel: %v, want %q", err, want)
	}
	if _, err := c.Submit(ctx, api.JobSpec{Op: "teleport", Input: in}); apiCode(err) != api.CodeUnknownOp {
		t.Fatalf("unknown op: %v", err)
	}
	for _, re := range []string{
		`level=WARN msg="unit failed" .*job=` + failed.ID + ` .*unit=0 .*worker=w1 reason=".*bad image`,
		`level=WARN msg="job failed" .*job=` + failed.ID + ` .*reason="unit 0 failed on worker w1: .*image`,
		`level=INFO msg="job cancelled" .*job=` + j.ID + ` units=200`,
		`level=INFO msg="request refused" .*method=POST path=/v1/jobs/` + j.ID + `/cancel status=409 code=conflict message="job ` + j.ID + ` is already cancelled"`,
		`level=INFO msg="request refused" .*method=POST path=/v1/jobs status=400 code=unknown_operation message="unknown operation \\"teleport\\"`,
	} {
		// Keys may still carry the component's group (dispatch.job=).
		if !regexp.MustCompile(re).MatchString(strings.ReplaceAll(logs.String(), "dispatch.", "")) {
			t.Errorf("server log lacks a line matching %s:\n%s", re, logs.String())
		}
	}
}

// TestDebugLogsEachUnit: at debug level the server says each unit it sends
// and each result it takes, with the job, unit and worker; at info level
// it says neither.
func TestDebugLogsEachUnit(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		logs := &testlog.Buffer{}
		ctx := testCtx(t)
		cl, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(),
			Logger:  logs.Logger(level),
			Workers: []cluster.WorkerSpec{{Threads: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		j := runJob(t, cl.Client, api.JobSpec{Op: "noop", Input: put(t, cl.Client, []byte("x")), Repeat: 3})
		cl.Close()
		want := 0
		if level == slog.LevelDebug {
			want = 3
		}
		for _, msg := range []string{"unit sent", "unit result"} {
			re := regexp.MustCompile(`level=DEBUG msg="` + msg + `" role=server component=dispatch job=` + j.ID + ` unit=\d attempt=1 worker=w1 `)
			if n := len(re.FindAllString(logs.String(), -1)); n != want {
				t.Errorf("%v: %d %q lines, want %d:\n%s", level, n, msg, want, logs.String())
			}
		}
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/cluster"
	"github.com/braidhq/braid/ops/samples"
)

// Off a terminal a wait says why a job waits, once when the reason
// appears and again when it changes.
func TestWaitingNotes(t *testing.T) {
	var b bytes.Buffer
	note := waitingNotes(&b)
	for _, w := range []string{"", "no registered worker can run operation \"blur\"", "no registered worker can run operation \"blur\"",
		"no registered worker can run operation \"sobel\"", "", "", "no registered worker can run operation \"sobel\""} {
		note(api.Job{ID: "j-1", Waiting: w})
	}
	want := "braid: job j-1 waiting: no registered worker can run operation \"blur\"\n" +
		"braid: job j-1 waiting: no registered worker can run operation \"sobel\"\n" +
		"braid: job j-1 waiting: no registered worker can run operation \"sobel\"\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// syncBuffer is a bytes.Buffer safe for a command writing to it while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `braid wait` and `submit --wait` in a script (no terminal) print one line
// on stderr while the job waits for a worker, and finish once one comes.
func TestWaitSaysWhyOffTerminal(t *testing.T) {
	c := startCluster(t, 0)
	url := c.Client.URL()
	id := putSample(t, url, samples.GIF())
	_, jobID, _ := runCmd(t, "submit", "--server", url, "--op", "blur", "--input", id)
	jobID = strings.TrimSpace(jobID)
	type result struct {
		code           int
		stdout, stderr *syncBuffer
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(args ...string) (*syncBuffer, <-chan result) {
		done := make(chan result, 1)
		var stdout, stderr syncBuffer
		go func() {
			code := run(ctx, args, &env{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }})
			done <- result{code, &stdout, &stderr}
		}()
		return &stderr, done
	}
	waitErr, waitDone := start("wait", "--server", url, jobID)
	submitErr, submitDone := start("submit", "--server", url, "--op", "blur", "--input", id, "--wait")
	line := "braid: job " + jobID + ` waiting: no registered worker can run operation "blur"` + "\n"
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(waitErr.String(), line) || !strings.Contains(submitErr.String(), `waiting: no registered worker can run operation "blur"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting line:\nwait: %q\nsubmit --wait: %q", waitErr.String(), submitErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		var out bytes.Buffer
		secret := func(k string) string {
			if k == "BRAID_SECRET" {
				return string(cluster.DefaultSecret)
			}
			return ""
		}
		run(wctx, []string{"worker", "--server", url, "--name", "late", "--threads", "1", "--ops", "blur",
			"--transport", "tcpn", "--wasm-cache", ""}, &env{stdout: &out, stderr: &out, getenv: secret})
	}()
	defer func() { stopWorker(); <-workerDone }()
	for _, done := range []<-chan result{waitDone, submitDone} {
		r := <-done
		if r.code != 0 || strings.Count(r.stderr.String(), "waiting:") != 1 {
			t.Errorf("exit %d, stderr:\n%s\nwant exit 0 and one waiting line", r.code, r.stderr.String())
		}
	}
}

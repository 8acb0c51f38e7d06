package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// outageLen is how long the flaky server stays away in these tests.
const outageLen = time.Second

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func retrying(f *flaky, n *notes) *client.Client {
	return client.New(f.URL()).WithRetry(client.Retry{Notify: n.notify, Recovered: n.recover})
}

// Every call rides through an outage in which connections are refused,
// since nothing of the request was sent.
func TestCallsRideThroughRestart(t *testing.T) {
	payload := bytes.Repeat([]byte("braid"), 10_000)
	calls := map[string]func(context.Context, *client.Client, *fakeAPI) error{
		"Job": func(ctx context.Context, c *client.Client, _ *fakeAPI) error {
			j, err := c.Job(ctx, "job1", false)
			if err == nil && j.ID != "job1" {
				err = errors.New("wrong job " + j.ID)
			}
			return err
		},
		"Jobs": func(ctx context.Context, c *client.Client, _ *fakeAPI) error {
			js, err := c.Jobs(ctx)
			if err == nil && len(js) != 1 {
				err = errors.New("wrong list")
			}
			return err
		},
		"GetBytes": func(ctx context.Context, c *client.Client, a *fakeAPI) error {
			a.mu.Lock()
			a.object = payload
			a.mu.Unlock()
			b, err := c.GetBytes(ctx, "obj")
			if err == nil && !bytes.Equal(b, payload) {
				err = errors.New("wrong bytes")
			}
			return err
		},
		"Submit": func(ctx context.Context, c *client.Client, a *fakeAPI) error {
			_, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: "obj"})
			if n := a.hitsOf("POST /v1/jobs"); err == nil && n != 1 {
				err = errors.New("the server saw more than one POST")
			}
			return err
		},
		"Put seeker": func(ctx context.Context, c *client.Client, a *fakeAPI) error {
			return put(ctx, c, a, bytes.NewReader(payload), payload)
		},
		"Put reader": func(ctx context.Context, c *client.Client, a *fakeAPI) error {
			r := io.MultiReader(bytes.NewReader(payload[:100]), bytes.NewReader(payload[100:]))
			return put(ctx, c, a, r, payload)
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := newFakeAPI()
			f := newFlaky(t, a)
			var n notes
			c := retrying(f, &n)
			start := time.Now()
			f.outage(outageLen)
			if err := call(testCtx(t), c, a); err != nil {
				t.Fatalf("%v\nretries: %v", err, &n)
			}
			if time.Since(start) < outageLen {
				t.Errorf("answered after %v, while the server was away", time.Since(start))
			}
			if waits, recovered := n.counts(); waits == 0 || recovered != 1 {
				t.Errorf("Notify %d times, Recovered %d times; want some and 1", waits, recovered)
			}
		})
	}
}

func put(ctx context.Context, c *client.Client, a *fakeAPI, r io.Reader, want []byte) error {
	if _, err := c.Put(ctx, r); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.uploads) != 1 || !bytes.Equal(a.uploads[0], want) {
		return errors.New("the server did not get the body once, whole")
	}
	return nil
}

// Wait keeps waiting across a restart that cuts its long-poll or its event
// stream, and returns the job's final status.
func TestWaitRidesThroughRestart(t *testing.T) {
	for _, events := range []bool{false, true} {
		name, pattern := "long-poll", "GET /v1/jobs/{id}/wait"
		if events {
			name, pattern = "events", "GET /v1/jobs/{id}/events"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := newFakeAPI()
			f := newFlaky(t, a)
			var n notes
			c := retrying(f, &n)
			var seen []api.Job // written by Wait's goroutine, read after done
			var progress func(api.Job)
			if events {
				progress = func(j api.Job) { seen = append(seen, j) }
			}
			type result struct {
				j   api.Job
				err error
			}
			done := make(chan result, 1)
			go func() {
				j, err := c.Wait(testCtx(t), "job1", progress)
				done <- result{j, err}
			}()
			a.waitHits(t, pattern, 1)
			<-f.outage(outageLen)
			a.waitHits(t, pattern, 2)
			a.finish()
			var r result
			select {
			case r = <-done:
			case <-time.After(time.Minute):
				t.Fatalf("Wait still waiting after the job finished; retries: %v", &n)
			}
			if r.err != nil || r.j.State != api.JobDone {
				t.Fatalf("Wait: %v, %+v; retries: %v", r.err, r.j, &n)
			}
			if waits, recovered := n.counts(); waits == 0 || recovered != 1 {
				t.Errorf("Notify %d times, Recovered %d times; want some and 1", waits, recovered)
			}
			if !events {
				return
			}
			var running int
			for _, j := range seen {
				if j.State == api.JobRunning {
					running++
				}
			}
			if running < 2 || seen[len(seen)-1].State != api.JobDone {
				t.Errorf("progress saw %d running states (want one per connection) and last %q, want done", running, seen[len(seen)-1].State)
			}
		})
	}
}

// A job the server does not know is an error at once, never retried.
func TestNotFoundIsNotRetried(t *testing.T) {
	a := newFakeAPI()
	f := newFlaky(t, a)
	var n notes
	c := retrying(f, &n)
	ctx := testCtx(t)
	calls := map[string]func() error{
		"Job":         func() error { _, err := c.Job(ctx, "nope", false); return err },
		"Wait":        func() error { _, err := c.Wait(ctx, "nope", nil); return err },
		"Wait+events": func() error { _, err := c.Wait(ctx, "nope", func(api.Job) {}); return err },
	}
	for name, call := range calls {
		err := call()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
			t.Errorf("%s: %v, want %s", name, err, api.CodeNotFound)
		}
	}
	hits := a.hitsOf("GET /v1/jobs/{id}") + a.hitsOf("GET /v1/jobs/{id}/wait") + a.hitsOf("GET /v1/jobs/{id}/events")
	if waits, _ := n.counts(); waits != 0 || hits != 3 {
		t.Errorf("%d requests, %d retries; want 3 and none", hits, waits)
	}
}

// A server that stays away: the call gives up when its context ends, or
// after the policy's For, with the last error; with For < 0 at once,
// retrying never (its Notify counts). Giving up takes up to 10 s on a
// loaded machine, not the 30 s of DefaultRetryFor or the minute of the
// context that a call ignoring its bound would take.
func TestGivingUp(t *testing.T) {
	a := newFakeAPI()
	f := newFlaky(t, a)
	f.down()
	cases := []struct {
		name     string
		retry    client.Retry
		ctx      time.Duration
		min, max time.Duration
		want     error
	}{
		{"context", client.Retry{}, 300 * time.Millisecond, 300 * time.Millisecond, 10 * time.Second, context.DeadlineExceeded},
		{"For", client.Retry{For: 300 * time.Millisecond}, time.Minute, 300 * time.Millisecond, 10 * time.Second, syscall.ECONNREFUSED},
		{"off", client.Retry{For: -1}, time.Minute, 0, 10 * time.Second, syscall.ECONNREFUSED},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n notes
			tc.retry.Notify = n.notify
			c := client.New(f.URL()).WithRetry(tc.retry)
			for name, call := range map[string]func(context.Context) error{
				"Job":  func(ctx context.Context) error { _, err := c.Job(ctx, "job1", false); return err },
				"Wait": func(ctx context.Context) error { _, err := c.Wait(ctx, "job1", func(api.Job) {}); return err },
			} {
				start := time.Now() // before the deadline is set, which counts from its own now
				ctx, cancel := context.WithTimeout(context.Background(), tc.ctx)
				err := call(ctx)
				d := time.Since(start)
				cancel()
				if !errors.Is(err, tc.want) || !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("%s: %v, want %v with the last error", name, err, tc.want)
				}
				if d < tc.min || d > tc.max {
					t.Errorf("%s gave up after %v, want %v to %v", name, d, tc.min, tc.max)
				}
			}
			if waits, _ := n.counts(); (waits == 0) != (tc.retry.For < 0) {
				t.Errorf("%d retries", waits)
			}
		})
	}
}

// Submit is not repeated once the request may have reached the server: a
// connection cut after sending is an error, and the server saw one POST.
func TestSubmitNotRepeatedAfterSending(t *testing.T) {
	a := newFakeAPI()
	a.dropPost = true
	f := newFlaky(t, a)
	var n notes
	_, err := retrying(f, &n).Submit(testCtx(t), api.JobSpec{Op: "blur", Input: "obj"})
	if err == nil {
		t.Fatal("Submit succeeded on a cut connection")
	}
	if posts := a.hitsOf("POST /v1/jobs"); posts != 1 {
		t.Errorf("the server saw %d POSTs, want 1", posts)
	}
	if waits, _ := n.counts(); waits != 0 {
		t.Errorf("Submit was retried: %v", &n)
	}
}

// A 503 is an outage for a GET.
func TestUnavailableIsRetried(t *testing.T) {
	a := newFakeAPI()
	a.unavailable = 2
	f := newFlaky(t, a)
	var n notes
	if _, err := retrying(f, &n).Job(testCtx(t), "job1", false); err != nil {
		t.Fatalf("%v; retries: %v", err, &n)
	}
	if waits, recovered := n.counts(); waits != 2 || recovered != 1 {
		t.Errorf("retries: %v; want 2 and recovered once", &n)
	}
}

// Get repeats a download only while nothing was written: once part of the
// object is in the writer, a cut connection is an error. GetBytes owns its
// buffer and downloads again.
func TestGetCutHalfway(t *testing.T) {
	a := newFakeAPI()
	a.object = bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
	a.cutObject = true
	f := newFlaky(t, a)
	var n notes
	c := retrying(f, &n)
	var buf bytes.Buffer
	if err := c.Get(testCtx(t), "obj", &buf); err == nil || buf.Len() == 0 {
		t.Fatalf("Get of a cut download: err %v, %d bytes written", err, buf.Len())
	}
	if hits := a.hitsOf("GET /v1/objects/{id}"); hits != 1 {
		t.Errorf("Get tried %d times after writing part of the object", hits)
	}
	a.mu.Lock()
	a.cutObject = true
	a.mu.Unlock()
	b, err := c.GetBytes(testCtx(t), "obj")
	if err != nil || !bytes.Equal(b, a.object) {
		t.Errorf("GetBytes of a cut download: %v, %d bytes", err, len(b))
	}
}

// A writer that fails is the caller's problem: Get returns its error
// without downloading again.
func TestGetWriterFails(t *testing.T) {
	a := newFakeAPI()
	a.object = []byte("some bytes")
	f := newFlaky(t, a)
	var n notes
	err := retrying(f, &n).Get(testCtx(t), "obj", failingWriter{})
	if !errors.Is(err, syscall.EPIPE) || a.hitsOf("GET /v1/objects/{id}") != 1 {
		t.Errorf("Get into a broken pipe: %v after %d requests", err, a.hitsOf("GET /v1/objects/{id}"))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// Concurrent calls through one client ride through the same outage.
func TestConcurrentCallsRideThrough(t *testing.T) {
	t.Parallel()
	a := newFakeAPI()
	f := newFlaky(t, a)
	c := client.New(f.URL())
	f.outage(outageLen)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := c.Job(testCtx(t), "job1", false)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/braidhq/braid/api"
)

var errRefused = &url.Error{Op: "Get", URL: "http://127.0.0.1:1/v1/jobs", Err: &net.OpError{Op: "dial", Net: "tcp",
	Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}

func TestTransient(t *testing.T) {
	reset := &url.Error{Op: "Get", Err: &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}}
	noHost := &url.Error{Op: "Get", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nope", IsNotFound: true}}}
	cases := []struct {
		name      string
		err       error
		get, post bool // transient for a GET, for a POST
	}{
		{"refused", errRefused, true, true},
		{"no such host", noHost, false, false},
		{"reset", reset, true, false},
		{"EOF", &url.Error{Op: "Get", Err: io.EOF}, true, false},
		{"stream ended", fmt.Errorf("event stream ended: %w", io.ErrUnexpectedEOF), true, false},
		{"503 from a stopping braid server", &unavailableError{err: &api.Error{Code: api.CodeUnavailable}, status: 503}, true, true},
		{"503 from a proxy", &unavailableError{err: &api.Error{Code: "http_503"}, status: 503}, true, false},
		{"502", &unavailableError{err: &api.Error{Code: api.CodeUnavailable}, status: 502}, true, false},
		{"404", &api.Error{Code: api.CodeNotFound}, false, false},
		{"409", &api.Error{Code: api.CodeConflict}, false, false},
		{"deadline", &url.Error{Op: "Get", Err: context.DeadlineExceeded}, false, false},
		{"cancelled", context.Canceled, false, false},
	}
	for _, tc := range cases {
		if got := transient(tc.err, true); got != tc.get {
			t.Errorf("%s: transient for a GET = %v", tc.name, got)
		}
		if got := transient(tc.err, false); got != tc.post {
			t.Errorf("%s: transient for a POST = %v", tc.name, got)
		}
	}
}

func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{firstBackoff, 800 * time.Millisecond, maxBackoff} {
		for range 1000 {
			if j := jitter(d); j < d/2 || j >= d {
				t.Fatalf("jitter(%v) = %v, want [%v, %v)", d, j, d/2, d)
			}
		}
	}
}

// The waits start near 100 ms, double up to 2 s, and stop when the outage
// has lasted For; the last wait is cut to end at For.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		o := outage{policy: Retry{For: 10 * time.Second, Notify: func(_ error, d time.Duration) { waits = append(waits, d) }}}
		start := time.Now()
		var err error
		for err == nil {
			err = o.failed(t.Context(), errRefused, false)
		}
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("gave up after %v, want 10s", took)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "gave up after 10s") {
			t.Errorf("error %q", err)
		}
		next := firstBackoff
		for i, w := range waits[:len(waits)-1] {
			if w < next/2 || w >= next {
				t.Errorf("wait %d is %v, want [%v, %v)", i, w, next/2, next)
			}
			next = min(2*next, maxBackoff)
		}
	})
}

// An answer ends the outage: Recovered is called once, and the next
// failure starts from the first wait again.
func TestAnsweredEndsOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var waits []time.Duration
		recovered := 0
		o := outage{policy: Retry{Notify: func(_ error, d time.Duration) { waits = append(waits, d) }, Recovered: func() { recovered++ }}}
		o.answered()
		for range 5 {
			if err := o.failed(t.Context(), errRefused, false); err != nil {
				t.Fatal(err)
			}
		}
		o.answered()
		o.answered()
		if err := o.failed(t.Context(), errRefused, false); err != nil {
			t.Fatal(err)
		}
		if recovered != 1 {
			t.Errorf("Recovered %d times, want 1", recovered)
		}
		if last := waits[len(waits)-1]; last >= firstBackoff {
			t.Errorf("first wait of a new outage is %v, want under %v", last, firstBackoff)
		}
	})
}

// A context that ends during a wait ends the call with its error and the
// outage's last one.
func TestContextEndsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
		defer cancel()
		o := outage{}
		var err error
		for err == nil {
			err = o.failed(ctx, errRefused, true)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("error %q", err)
		}
	})
}

func TestReadEvents(t *testing.T) {
	ev := func(typ, state string) string {
		return fmt.Sprintf("event: %s\ndata: {\"type\":%q,\"job\":{\"id\":\"j\",\"state\":%q}}\n\n", typ, typ, state)
	}
	cases := []struct {
		name   string
		stream string
		seen   int
		want   error
	}{
		{"whole", ev("progress", "running") + ev("done", "done"), 2, nil},
		{"cut between events", ev("progress", "running"), 1, io.ErrUnexpectedEOF},
		{"cut inside an event", ev("progress", "running") + ev("done", "done")[:40], 1, io.ErrUnexpectedEOF},
		{"cut before the blank line", strings.TrimSuffix(ev("done", "done"), "\n"), 0, io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		seen := 0
		err := readEvents(strings.NewReader(tc.stream), func(api.Job) { seen++ })
		if !errors.Is(err, tc.want) || seen != tc.seen {
			t.Errorf("%s: %d events, %v; want %d, %v", tc.name, seen, err, tc.seen, tc.want)
		}
	}
	err := readEvents(strings.NewReader("data: {nope\n\n"), func(api.Job) {})
	var f *finalError
	if !errors.As(err, &f) {
		t.Errorf("a bad event: %v, want a final error", err)
	}
}

// A body that was read and cannot seek back is not sent again; one that
// can seek is rewound to where Put found it.
func TestUploadReplay(t *testing.T) {
	r := strings.NewReader("xxpayload")
	if _, err := r.Seek(2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	u := newUpload(r)
	for range 2 {
		body, n, err := u.open()
		if err != nil || n != 7 {
			t.Fatalf("open: %v, length %d", err, n)
		}
		if b, _ := io.ReadAll(body); string(b) != "payload" {
			t.Fatalf("body %q", b)
		}
		if !u.replayable() {
			t.Fatal("a seeker is not replayable")
		}
	}
	if body, _, _ := u.open(); isCloser(body) {
		t.Error("the transport would close the caller's reader")
	}
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write([]byte("once")); pw.Close() }()
	u = newUpload(pr)
	if !u.replayable() {
		t.Error("an unread pipe is not replayable")
	}
	body, n, _ := u.open()
	if _, err := io.ReadAll(body); err != nil || n != -1 {
		t.Fatal(err, n)
	}
	if u.replayable() {
		t.Error("a read pipe is replayable")
	}
	if _, _, err := u.open(); !errors.Is(err, errNotReplayable) {
		t.Errorf("open of a read pipe: %v", err)
	}
}

func isCloser(r io.Reader) bool {
	_, ok := r.(io.Closer)
	return ok
}

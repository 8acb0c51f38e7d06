package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/braidhq/braid/cluster"
)

// Another HTTP server's page is not dumped: the user is asked whether the
// URL is braid's.
func TestNotABraidServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<html><body><h1>Not Found</h1>\n<p>nothing here</p></body></html>"))
	}))
	defer srv.Close()
	code, _, stderr := runCmd(t, "status", "--server", srv.URL, "j-000000000000")
	want := "braid status: " + srv.URL + " answered 404 Not Found; is it a braid server?\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
	}
}

// With --json, an error is a JSON object on stderr.
func TestJSONErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write([]byte(`{"error": {"code": "conflict", "message": "conflict: job j-1 is running"}}`))
	}))
	defer srv.Close()
	cases := []struct {
		args       []string
		code       int
		msg, ecode string
	}{
		{[]string{"cancel", "--server", srv.URL, "j-000000000001"}, 1, "conflict: job j-1 is running", "conflict"},
		{[]string{"jobs", "--server", closedURL(t), "--timeout", "300ms"}, 1, "no braid server at", "no_server"},
	}
	for _, tc := range cases {
		code, _, stderr := runCmd(t, append(tc.args, "--json")...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		var got struct{ Error, Code string }
		err := json.Unmarshal([]byte(lines[len(lines)-1]), &got)
		if code != tc.code || err != nil || !strings.HasPrefix(got.Error, tc.msg) || got.Code != tc.ecode {
			t.Errorf("braid %s --json: exit %d, stderr %q (%v); want %q with code %q", tc.args[0], code, stderr, err, tc.msg, tc.ecode)
		}
	}
	// Without --json the code is said once.
	code, _, stderr := runCmd(t, "cancel", "--server", srv.URL, "j-000000000001")
	if code != 1 || stderr != "braid cancel: conflict: job j-1 is running\n" {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A package that names itself in its error is not named twice.
func TestReportSaysTheCommandOnce(t *testing.T) {
	var b bytes.Buffer
	report(&env{stderr: &b}, "server", errors.New("server: window 40: want 1 to 32"))
	report(&env{stderr: &b}, "worker", errors.New("worker: a cluster secret is required"))
	want := "braid server: window 40: want 1 to 32\nbraid worker: a cluster secret is required\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// --json output is readable: < > & are not escaped for HTML, in errors on
// stderr as in results on stdout.
func TestJSONIsNotHTMLEscaped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/jobs" {
			_, _ = w.Write([]byte(`[{"id": "j-000000000001", "spec": {"op": "a<b>&c"}, "state": "done"}]`))
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error": {"code": "bad_parameter", "message": "want <1 & >0"}}`))
	}))
	defer srv.Close()
	_, stdout, _ := runCmd(t, "jobs", "--json", "--server", srv.URL)
	if !strings.Contains(stdout, `"op": "a<b>&c"`) {
		t.Errorf("jobs --json: %s", stdout)
	}
	_, _, stderr := runCmd(t, "cancel", "--json", "--server", srv.URL, "j-000000000001")
	if !strings.Contains(stderr, `want <1 & >0"`) {
		t.Errorf("cancel --json: stderr %s", stderr)
	}
}

// A URL that is not the server's base URL (the wrong scheme, a page of the
// dashboard) gets the same hint from client commands and the worker: the
// URL to give instead.
func TestWrongServerURL(t *testing.T) {
	c := startCluster(t, 0)
	base := c.Client.URL()
	https := "https://" + strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "--server", https}, "braid jobs: " + https + " is not the server's base URL: it is an HTTP server; give the server's base URL, such as " + base + "\n"},
		{[]string{"jobs", "--server", base + "/ui"}, "braid jobs: " + base + "/ui is not the server's base URL: the API is not under /ui; give the server's base URL, such as " + base + "\n"},
		{[]string{"worker", "--server", base + "/ui", "--name", "w-ui"},
			base + "/ui is not the server's base URL: the API is not under /ui; give the server's base URL, such as " + base},
	} {
		code, _, stderr := runCmdEnv(t, map[string]string{"BRAID_SECRET": string(cluster.DefaultSecret)}, tc.args...)
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("braid %s: exit %d, stderr %q; want exit 1 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	code, _, stderr := runCmd(t, "jobs", "--json", "--server", https)
	if code != 1 || !strings.Contains(stderr, `"code":"wrong_url"`) {
		t.Errorf("jobs --json: exit %d, stderr %q", code, stderr)
	}
}

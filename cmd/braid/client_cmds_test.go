package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// runCmd runs braid in-process with args and returns its exit code, stdout
// and stderr. Its deadline only stops a command that hangs: a demo under
// the race detector on a busy machine takes over 20 s.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCmdEnv(t, nil, args...)
}

// runCmdEnv is runCmd with the environment variables in vars.
func runCmdEnv(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &env{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] }})
	return code, stdout.String(), stderr.String()
}

// With the server away, a command retries until its --timeout and says so
// once, off a terminal.
func TestTimeoutWhileServerAway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	start := time.Now()
	code, _, stderr := runCmd(t, "status", "--server", url, "--timeout", "500ms", "job1")
	if d := time.Since(start); d < 500*time.Millisecond || d > 20*time.Second { // it must wait, and give up
		t.Errorf("gave up after %v, want 500ms", d)
	}
	if code != 1 || strings.Count(stderr, "server "+url+" unreachable (connection refused); retrying (if no braid server runs there, set --server or $BRAID_SERVER)") != 1 ||
		!strings.Contains(stderr, "braid status: no braid server at "+url+" (set --server or $BRAID_SERVER): connection refused; gave up after --timeout 500ms\n") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

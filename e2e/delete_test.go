package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/ops/samples"
)

// TestDeleteCLI drives `braid delete` against a real server: a job or an
// object still in use is a conflict, a failure for one argument does not
// stop the others, and what was deleted is gone.
//
// The server's DELETE routes come in a change of their own; until a server
// serves them, the test skips.
func TestDeleteCLI(t *testing.T) {
	_, c := startServer(t)
	skipWithoutDeleteRoutes(t, c)
	start(t, "worker", "--server", c.URL(), "--threads", "1", "--name", "w1", "--transport", "tcpn")
	waitWorkersUp(t, c, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	in := filepath.Join(t.TempDir(), "in.gif")
	if err := os.WriteFile(in, samples.GIF(), 0o644); err != nil {
		t.Fatal(err)
	}
	gif := strings.TrimSpace(cli(t, c, "put", in))
	var done api.Job
	if err := json.Unmarshal([]byte(cli(t, c, "submit", "--op", "grayscale", "--input", gif, "--wait", "--json")), &done); err != nil {
		t.Fatal(err)
	}
	png, err := c.Put(ctx, bytes.NewReader(samples.PNG()))
	if err != nil {
		t.Fatal(err)
	}
	long, err := c.Submit(ctx, api.JobSpec{Op: "blur", Input: png.ID, Params: map[string]string{"sigma": "2"}, Repeat: 2000})
	if err != nil {
		t.Fatal(err)
	}

	// A job that is not finished, and the object it reads, stay.
	for _, args := range [][]string{{"--job", long.ID}, {png.ID}} {
		code, _, stderr := cliExit(t, c, append([]string{"delete"}, args...)...)
		if code != 1 || !strings.Contains(stderr, api.CodeConflict) {
			t.Errorf("delete %v while the job runs: exit %d, stderr %q; want 1 and %s", args, code, stderr, api.CodeConflict)
		}
	}
	// One failure does not stop the others.
	code, stdout, stderr := cliExit(t, c, "delete", "--job", "j-nosuchjob", done.ID)
	if code != 1 || stdout != "deleted job "+done.ID+"\n" || !strings.Contains(stderr, api.CodeNotFound) {
		t.Errorf("delete --job j-nosuchjob %s: exit %d, stdout %q, stderr %q", done.ID, code, stdout, stderr)
	}
	if _, err := c.Job(ctx, done.ID, false); apiCode(err) != api.CodeNotFound {
		t.Errorf("status of a deleted job: %v, want %s", err, api.CodeNotFound)
	}

	cli(t, c, "cancel", long.ID)
	if _, err := c.Wait(ctx, long.ID, nil); err != nil {
		t.Fatal(err)
	}
	cli(t, c, "delete", "--job", long.ID)
	if out := cli(t, c, "delete", png.ID, gif); out != "deleted object "+png.ID+"\ndeleted object "+gif+"\n" {
		t.Errorf("delete objects printed %q", out)
	}
	if _, err := c.GetBytes(ctx, gif); apiCode(err) != api.CodeNoObject {
		t.Errorf("get of a deleted object: %v, want %s", err, api.CodeNoObject)
	}
}

// skipWithoutDeleteRoutes skips the test if the server answers a DELETE of
// a job or an object with 404 "no such endpoint": it predates them.
func skipWithoutDeleteRoutes(t *testing.T, c *client.Client) {
	t.Helper()
	for _, path := range []string{"/v1/jobs/j-e2e-probe", "/v1/objects/e2e-probe"} {
		req, _ := http.NewRequest(http.MethodDelete, c.URL()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound && strings.Contains(string(body), "no such endpoint") {
			t.Skipf("the server does not serve DELETE %s yet (404 no such endpoint); this test runs once it does", path)
		}
	}
}

// cliExit runs a client command against c's server and returns its exit
// code and output, whatever the code.
func cliExit(t *testing.T, c *client.Client, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, c, true, args...)
}

// runCLI runs a client command against c's server with the server's admin
// token in $BRAID_TOKEN, or (token false) with no $BRAID_TOKEN at all, and
// returns its exit code and output.
func runCLI(t *testing.T, c *client.Client, token bool, args ...string) (int, string, string) {
	t.Helper()
	args = withServer(c, args)
	cmd := exec.Command(braidBin, args...)
	if token {
		withToken(cmd, args)
	} else {
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "BRAID_TOKEN=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("braid %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// withServer puts --server URL after the command's words (two for
// "op add", whose flags follow the subcommand).
func withServer(c *client.Client, args []string) []string {
	n := 1
	if len(args) > 1 && args[0] == "op" {
		n = 2
	}
	return append(args[:n:n], append([]string{"--server", c.URL()}, args[n:]...)...)
}

func apiCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return ""
}

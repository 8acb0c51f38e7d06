package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// A second `braid worker --name w1` while w1 runs exits 1 saying the name
// is in use, and w1 keeps it; w1 killed with -9 and started again at once
// is back long before the server's 5-minute heartbeat timeout.
func TestWorkerNameInUse(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, "server", "--listen", "127.0.0.1:0", "--data", dir, "--heartbeat-timeout", "5m")
	c := connect(t, srv, dir)
	args := []string{"worker", "--server", c.URL(), "--threads", "1", "--name", "w1", "--transport", "tcp"}
	w1 := start(t, args...)
	waitWorkersUp(t, c, 1)
	first := workerEpoch(t, c)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dup := exec.CommandContext(ctx, braidBin, args...)
	dup.Env = append(os.Environ(), "BRAID_SECRET="+secret)
	var stderr bytes.Buffer
	dup.Stderr = &stderr
	err := dup.Run()
	var ee *exec.ExitError
	want := "braid worker: rejected by server " + c.URL() + ": name w1 is in use by a live worker at tcp "
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), want) ||
		!strings.Contains(stderr.String(), "(pick another --name)") {
		t.Fatalf("second w1: %v; stderr:\n%s\nwant exit 1 and %q", err, stderr.String(), want)
	}
	if e := workerEpoch(t, c); e != first {
		t.Fatalf("w1's epoch went from %d to %d: the duplicate took the name", first, e)
	}

	kill9(t, w1)
	restarted := time.Now()
	start(t, args...)
	for {
		ws, _ := c.Workers(ctx)
		if len(ws) == 1 && ws[0].State == api.WorkerUp && ws[0].Info.Epoch != first {
			break
		}
		if time.Since(restarted) > time.Minute { // not the heartbeat timeout's 5
			t.Fatalf("the restarted w1 is not up after a minute: %+v", ws)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("restarted w1 up after %v", time.Since(restarted).Round(time.Millisecond))
}

func workerEpoch(t *testing.T, c *client.Client) uint64 {
	t.Helper()
	ws, err := c.Workers(context.Background())
	if err != nil || len(ws) != 1 {
		t.Fatalf("workers: %+v %v", ws, err)
	}
	return ws[0].Info.Epoch
}

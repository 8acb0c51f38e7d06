package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop/sandbox"
)

// TestScriptUnitAlone runs a script operation on a worker process started
// with --allow-exec: its unit plants a setsid daemon, which is gone when
// the job is done, and sees its own processes only, as a user of the
// sandbox's range.
func TestScriptUnitAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--allow-exec needs root")
	}
	dir := t.TempDir()
	_, c := startServer(t)
	start(t, "worker", "--server", c.URL(), "--threads", "1", "--name", "w1", "--transport", "tcp", "--no-wasm",
		"--drain-timeout", "2s", "--allow-exec", "sh")
	waitWorkersUp(t, c, 1)
	script := `mkfifo "$HOME/up"
setsid sh -c 'echo up > "$HOME/up"; sleep 1000; exit 0' "$1" </dev/null >/dev/null 2>&1 &
read up < "$HOME/up"
id -u
ls -d /proc/[0-9]* | wc -l
`
	p := writeFile(t, dir, "plant.sh", []byte(script))
	if code, _, stderr := opCLI(t, c, "add", "plant", "--exec", p, "--interpreter", "sh", "--param", "tag:string"); code != 0 {
		t.Fatalf("op add: %s", stderr)
	}
	b := make([]byte, 6)
	rand.Read(b)
	tag := "braid-e2e-" + hex.EncodeToString(b)
	t.Cleanup(func() { killMarked(tag) })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	in := strings.TrimSpace(cli(t, c, "put", writeFile(t, dir, "in", []byte("x"))))
	j, err := c.Submit(ctx, api.JobSpec{Op: "plant", Input: in, Params: map[string]string{"tag": tag}})
	if err != nil {
		t.Fatal(err)
	}
	if j, err = c.Wait(ctx, j.ID, nil); err != nil || j.State != api.JobDone {
		t.Fatalf("%+v, %v", j, err)
	}
	if pids := killMarked(tag); len(pids) > 0 {
		t.Errorf("the job is done, and its unit's daemon runs on: processes %v", pids)
	}
	out, err := c.GetBytes(ctx, j.Result)
	f := strings.Fields(string(out))
	if err != nil || len(f) != 2 {
		t.Fatalf("%q, %v", out, err)
	}
	uid, _ := strconv.ParseUint(f[0], 10, 32)
	if n, _ := strconv.Atoi(f[1]); uid < sandbox.DefaultFirstUID || uid >= sandbox.DefaultFirstUID+sandbox.DefaultUIDs || n > 6 {
		t.Errorf("the unit ran as user %s and saw %s processes; want a user of the sandbox's range and its own few processes", f[0], f[1])
	}
}

// killMarked kills the host's processes whose command line holds s, and
// returns them.
func killMarked(s string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmd, err := os.ReadFile(d + "/cmdline")
		stat, _ := os.ReadFile(d + "/stat")
		if err != nil || !bytes.Contains(cmd, []byte(s)) || bytes.Contains(stat, []byte(") Z ")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		if pid == os.Getpid() {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
		out = append(out, pid)
	}
	return out
}

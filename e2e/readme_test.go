package e2e

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/testport"
)

// readmeMarker stands before the README block that TestReadmeHandRun runs.
const readmeMarker = "<!-- e2e/readme_test.go runs the next block as pasted. -->"

// readmeBlock is the fenced shell block after readmeMarker in README.md.
func readmeBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), readmeMarker+"\n```sh\n")
	if !ok {
		t.Fatalf("README.md has no ```sh block after %q", readmeMarker)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("README.md's hand-run block does not end")
	}
	return block + "\n"
}

// cliErrorRE matches the line a braid command prints when it fails:
// "braid: …" or "braid submit: …".
var cliErrorRE = regexp.MustCompile(`^braid( [a-z]+)?: `)

// waitingNoteRE matches the note a wait off a terminal prints while a job
// waits ("braid: job J waiting: no registered worker can run …"): on a
// busy machine the block's first job is submitted before its workers have
// registered, and saying so is no error.
var waitingNoteRE = regexp.MustCompile(`(?m)^braid: job \S+ waiting: `)

// shellErrors are the lines of a block's stderr that say a command failed:
// a braid command's error (cliErrorRE, not a waiting note) or the shell's.
func shellErrors(stderr string) []string {
	shellRE := regexp.MustCompile(`command not found|No such file`)
	var errs []string
	for line := range strings.Lines(stderr) {
		line = strings.TrimSuffix(line, "\n")
		if cliErrorRE.MatchString(line) && !waitingNoteRE.MatchString(line) || shellRE.MatchString(line) {
			errs = append(errs, line)
		}
	}
	return errs
}

// readmeEnv is the environment of a user who has just put braid on PATH:
// no braid settings of the test's own, a home of its own (so no
// configuration file), and BRAID_SERVER at addr, where the block was moved.
func readmeEnv(home, binDir, addr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BRAID_") && !strings.HasPrefix(kv, "HOME=") &&
			!strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BRAID_SERVER=http://"+addr)
}

// TestReadmeHandRun pastes README.md's hand-run block into bash, in a
// directory of its own with the repository's ops/samples and braid on PATH,
// as the README tells a user to. The one change is the port: 7070 becomes a
// free one (and $BRAID_SERVER says so to the client commands, which would
// default to 7070), since other tests and programs may hold 7070. The block
// must run to its end without an error, write edges.png, and leave no
// process behind once its last line has stopped them.
func TestReadmeHandRun(t *testing.T) {
	block := readmeBlock(t)
	if !strings.Contains(block, "127.0.0.1:7070") {
		t.Fatalf("the hand-run block no longer uses 127.0.0.1:7070; update this test:\n%s", block)
	}
	addr := testport.Addr(t)
	script := strings.ReplaceAll(block, "127.0.0.1:7070", addr)

	dir, home := t.TempDir(), t.TempDir()
	samples, err := filepath.Abs("../ops")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(samples, filepath.Join(dir, "ops")); err != nil {
		t.Fatal(err)
	}

	// A minute and a half is ample: on an idle 2-core machine the block
	// takes a few seconds, mostly the server's and workers' start.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash")
	cmd.Dir = dir
	cmd.Env = readmeEnv(home, filepath.Dir(braidBin), addr)
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) // whatever is left, on any exit
	err = cmd.Wait()
	defer func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}()
	if ctx.Err() != nil {
		t.Fatalf("the block did not finish within 90 s")
	}
	if err != nil {
		t.Fatalf("the block's last command failed: %v", err)
	}

	// Every command ran cleanly: no error line from the CLI or the shell.
	for _, line := range shellErrors(stderr.String()) {
		t.Errorf("stderr holds %q", line)
	}
	if m := waitingNoteRE.FindString(stderr.String()); m != "" {
		t.Logf("a job waited for its workers to register (%q…)", m)
	}
	// Both jobs are listed done, and the blur job's 100 units ran.
	if n := len(regexp.MustCompile(`(?m)\bdone\b`).FindAllString(stdout.String(), -1)); n < 2 {
		t.Errorf("`braid jobs` shows %d done jobs, want 2", n)
	}
	f, err := os.Open(filepath.Join(dir, "edges.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("edges.png: %v", err)
	}

	// Its last line stopped the server and the workers: the process group
	// empties (they drain first, so give them their drain time).
	deadline := time.Now().Add(45 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			out, _ := exec.Command("ps", "-o", "pid,args", "-g", strconv.Itoa(pgid)).CombinedOutput()
			t.Fatalf("processes left 45 s after the block stopped them:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process group %d: %v", pgid, err)
	}
}

// TestShellErrors: a waiting note is not taken for a failed command; a
// braid command's error and the shell's are.
func TestShellErrors(t *testing.T) {
	stderr := "braid: job j-1 waiting: no registered worker can run operation \"blur\"\n" +
		"braid submit: unknown operation \"blurr\"\n" +
		"braid: connection refused\n" +
		"bash: line 3: braidd: command not found\n" +
		"time=… level=INFO msg=\"worker registered\"\n"
	want := []string{`braid submit: unknown operation "blurr"`, "braid: connection refused", "bash: line 3: braidd: command not found"}
	if got := shellErrors(stderr); !slices.Equal(got, want) {
		t.Errorf("shellErrors = %q, want %q", got, want)
	}
}

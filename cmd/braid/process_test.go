package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/ops/samples"
	"golang.org/x/sys/unix"
)

// TestHelperProcess is braid itself when a test runs this binary with
// BRAID_TEST_MAIN=1; otherwise it does nothing.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("BRAID_TEST_MAIN") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i:]
			break
		}
	}
	os.Args = args // os.Args[0] is "--", the rest braid's arguments
	main()
}

// braidProcess returns braid as a process of its own, started from the test
// binary.
func braidProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "BRAID_TEST_MAIN=1", "BRAID_SERVER=")
	return cmd
}

// Ctrl-C while waiting says the job goes on and how to stop it, and exits
// 130; the job is still there.
func TestInterruptedWait(t *testing.T) {
	c := startCluster(t, 0) // no worker: the job waits for ever
	url, waiting := watchWaits(t, c.Client.URL())
	id := putSample(t, url, samples.GIF())
	_, jobID, _ := runCmd(t, "submit", "--server", url, "--op", "blur", "--input", id)
	jobID = strings.TrimSpace(jobID)
	for _, args := range [][]string{
		{"wait", "--server", url, jobID},
		{"submit", "--server", url, "--op", "blur", "--input", id, "--wait"},
	} {
		cmd := braidProcess(args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-waiting: // the process asked the server to wait for the job
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("braid %s never waited for its job; stderr %q", args[0], stderr.String())
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		select { // a wait the process may have asked for again is not the next one's
		case <-waiting:
		default:
		}
		waited := jobID
		if args[0] == "submit" {
			waited = strings.TrimSpace(stdout.String())
		}
		want := "stopped waiting; job " + waited + " keeps running (braid cancel " + waited + " to stop it)\n"
		if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.HasSuffix(stderr.String(), want) {
			t.Errorf("braid %s: exit %d, stderr %q; want 130 and %q", args[0], code, stderr.String(), want)
		}
		j, err := c.Client.Job(context.Background(), waited, false)
		if err != nil || j.Terminal() {
			t.Errorf("job %s after the interrupted wait: %s, %v", waited, j.State, err)
		}
	}
}

// watchWaits puts a proxy in front of the server at target and returns
// its URL and a channel that receives when a client asks it to wait for a
// job (a long poll, or the job's events): by then the client is waiting,
// its signal handling long set up.
func watchWaits(t *testing.T, target string) (string, <-chan struct{}) {
	u, err := neturl.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.WriteHeader(http.StatusBadGateway) // the interrupted client is gone
	}
	waiting := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/wait") || strings.HasSuffix(r.URL.Path, "/events") { // a long poll, or the event stream
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, waiting
}

// openPTY returns a pseudo-terminal's controller and its terminal end.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ctl.Close() })
	fd := int(ctl.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ctl, tty
}

// get to a terminal refuses an image, as curl does, and writes text.
func TestGetToTerminal(t *testing.T) {
	ctl, tty := openPTY(t)
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if !isTerminal(tty) || isTerminal(null) {
		t.Fatalf("isTerminal: pty %v, /dev/null %v", isTerminal(tty), isTerminal(null))
	}
	c := startCluster(t, 0)
	url := c.Client.URL()
	img := putSample(t, url, samples.GIF())
	text := putSample(t, url, []byte(`{"hello": "terminal ✓"}`))
	var stderr bytes.Buffer
	e := &env{stdout: tty, stderr: &stderr, getenv: func(string) string { return "" }}
	if code := run(context.Background(), []string{"get", "--server", url, img}, e); code != 1 ||
		!strings.Contains(stderr.String(), "standard output is a terminal: give -o FILE, or redirect") {
		t.Errorf("get of an image to a terminal: exit %d, stderr %q", code, stderr.String())
	}
	if code := run(context.Background(), []string{"get", "--server", url, text}, e); code != 0 {
		t.Fatalf("get of text to a terminal: exit %d, %s", code, stderr.String())
	}
	got := make([]byte, 100)
	n, err := ctl.Read(got)
	if err != nil || !strings.Contains(string(got[:n]), "terminal ✓") {
		t.Errorf("the terminal shows %q, %v", got[:n], err)
	}
}

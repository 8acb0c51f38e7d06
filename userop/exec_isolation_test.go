//go:build linux

package userop_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop"
	"golang.org/x/sys/unix"
)

// The tests of this file hold each script unit to a world of its own:
// nothing it starts outlives it, it sees and reaches no other process,
// its files and its network are its own, and its limits bound all its
// processes together.

// interpreters are the sh and python3 of this machine, by name.
func interpreters(t *testing.T, need ...string) map[string]string {
	t.Helper()
	interp := map[string]string{}
	for _, p := range []string{"/bin/sh", "/usr/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			interp[filepath.Base(p)] = p
		}
	}
	for _, n := range need {
		if interp[n] == "" {
			t.Skipf("no %s", n)
		}
	}
	return interp
}

// scriptRunner runs scripts as units of one runtime.
type scriptRunner struct {
	t  *testing.T
	st store
	r  *userop.Runtime
}

func newScriptRunner(t *testing.T, need ...string) *scriptRunner {
	s := &scriptRunner{t: t}
	s.r = newExecRuntime(t, &s.st, interpreters(t, need...))
	return s
}

// run runs script under interpreter with params and limits l.
func (s *scriptRunner) run(ctx context.Context, interpreter, script string, l api.OpLimits, params ...[2]string) (string, error) {
	d := s.st.add([]byte(script))
	out, err := s.r.Run(ctx, "s", d, userop.NewExecInvocation(interpreter, l, 0, params), nil)
	return string(out), err
}

// roomy are limits for scripts meant to finish, with room for a loaded
// machine.
var roomy = api.OpLimits{TimeoutMS: 120_000, MemoryMiB: 256, MaxOutput: 1 << 20}

// marker is a string no other process on the host has in its command
// line, removed from the host's processes and temporary directories when
// the test ends, whatever the code under test left.
func marker(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	m := "braid-test-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		for _, pid := range hostProcs(m) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
			os.Remove(filepath.Join(d, m))
		}
	})
	return m
}

// hostProcs are the live processes of the host whose command line holds s.
func hostProcs(s string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil || pid == os.Getpid() || !bytes.Contains(cmd, []byte(s)) {
			continue
		}
		if stat, err := os.ReadFile(d + "/stat"); err == nil && bytes.Contains(stat, []byte(") Z ")) {
			continue // a zombie: dead, waiting for its parent
		}
		out = append(out, pid)
	}
	return out
}

// waitFor polls cond until it holds or a minute passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// daemon plants a daemon that leaves the script's session and process
// group (setsid, in the background, stdio closed), with the script's
// first argument in its command line, and returns once it runs.
const daemon = `mkfifo "$HOME/up" || exit 1
setsid sh -c 'echo up > "$HOME/up"; sleep 1000; exit 0' "$1" </dev/null >/dev/null 2>&1 &
read up < "$HOME/up"
`

// TestExecLeavesNoProcess: a unit that plants a setsid daemon leaves no
// process behind, however it ends: success, failure, its time limit, or
// its worker stopping it.
func TestExecLeavesNoProcess(t *testing.T) {
	s := newScriptRunner(t, "sh")
	short := roomy
	short.TimeoutMS = 5000
	for _, c := range []struct {
		name, end string
		limits    api.OpLimits
		cancel    bool
		want      string
	}{
		{"succeeds", "echo done", roomy, false, ""},
		{"fails", "exit 3", roomy, false, "exit status 3"},
		{"times out", "sleep 1000", short, false, "ran past its time limit"},
		{"is stopped", "sleep 1000", roomy, true, "the unit was stopped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := marker(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if c.cancel {
				go func() {
					for len(hostProcs(m)) == 0 && ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
					cancel()
				}()
			}
			_, err := s.run(ctx, "sh", daemon+c.end, c.limits, [2]string{"tag", m})
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("the unit ended with %v, want %q", err, c.want)
			}
			if pids := hostProcs(m); len(pids) > 0 {
				t.Fatalf("the unit has ended, and left processes %v behind", pids)
			}
		})
	}
}

// TestExecSeesOnlyItsOwnProcesses: a unit's /proc lists its own
// processes, not the host's.
func TestExecSeesOnlyItsOwnProcesses(t *testing.T) {
	s := newScriptRunner(t, "sh")
	m := marker(t)
	host := exec.Command("sh", "-c", "sleep 1000; exit 0", m)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	out, err := s.run(t.Context(), "sh", `for p in /proc/[0-9]*; do echo "${p#/proc/}: $(tr '\0' ' ' < $p/cmdline)"; done`, roomy)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) > 6 || strings.Contains(out, m) {
		t.Fatalf("the unit sees %d processes, the host's among them:\n%s", len(lines), out)
	}
}

// TestExecUnitsApart: two units running at once run as different users,
// and one cannot find the other in /proc, read its command line or kill
// it.
func TestExecUnitsApart(t *testing.T) {
	s := newScriptRunner(t, "sh")
	m := marker(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type result struct {
		out string
		err error
	}
	first := make(chan result, 1)
	go func() {
		out, err := s.run(ctx, "sh", "id -u; sleep 1000; exit 0", roomy, [2]string{"tag", m})
		first <- result{out, err}
	}()
	waitFor(t, "the first unit to run", func() bool { return len(hostProcs(m)) > 0 })
	hunter := `want="tag=${1#--find=}"
id -u
for p in /proc/[0-9]*; do
	cmd=$(tr '\0' ' ' < $p/cmdline 2>/dev/null)
	case "$cmd" in *"$want"*) echo "sees ${p#/proc/}: $cmd"; kill -9 ${p#/proc/} && echo "killed ${p#/proc/}";; esac
done
`
	out, err := s.run(t.Context(), "sh", hunter, roomy, [2]string{"find", m})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "sees") {
		t.Errorf("a unit found another:\n%s", out)
	}
	if len(hostProcs(m)) == 0 {
		t.Errorf("the first unit's processes are gone after the second ran")
	}
	cancel()
	r := <-first
	if r.err == nil || !strings.Contains(r.err.Error(), "the unit was stopped") {
		t.Errorf("the first unit ended with %v, want its stop", r.err)
	}
	uid1, uid2 := strings.TrimSpace(r.out), strings.Fields(out)[0]
	if !unitUID(uid1) || !unitUID(uid2) || uid1 == uid2 {
		t.Errorf("units running at once ran as users %q and %q, want two of the sandbox's", uid1, uid2)
	}
}

// TestExecPrivateTmp: the files a unit writes in /tmp, /var/tmp, /dev/shm
// and its home are its own: another unit running meanwhile does not see
// them, and they are gone, from the host too, when it ends.
func TestExecPrivateTmp(t *testing.T) {
	s := newScriptRunner(t, "sh")
	m := marker(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	nap := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1e9) // a sleep the host can tell from any other
	writer := `n=${1#--name=}
for d in /tmp /var/tmp /dev/shm "$HOME"; do echo secret > "$d/$n" || exit 1; done
exec sleep ` + nap
	done := make(chan error, 1)
	go func() {
		_, err := s.run(ctx, "sh", writer, roomy, [2]string{"name", m})
		done <- err
	}()
	waitFor(t, "the writer to have written", func() bool {
		select {
		case err := <-done:
			t.Fatalf("the writer ended: %v", err)
		default:
		}
		return len(hostProcs("sleep\x00"+nap)) > 0
	})
	look := `ls -A /tmp /var/tmp /dev/shm; cat /tmp/* /var/tmp/* /dev/shm/* 2>/dev/null; exit 0`
	if out, err := s.run(t.Context(), "sh", look, roomy); err != nil || strings.Contains(out, m) || strings.Contains(out, "secret") {
		t.Errorf("a unit running beside the writer sees (%v):\n%s", err, out)
	}
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "the unit was stopped") {
		t.Errorf("the writer ended with %v, want its stop", err)
	}
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		if _, err := os.Stat(filepath.Join(d, m)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the writer's %s/%s is on the host after it ended (%v)", d, m, err)
		}
	}
	if out, err := s.run(t.Context(), "sh", look, roomy); err != nil || strings.Contains(out, m) {
		t.Errorf("a unit after the writer sees (%v):\n%s", err, out)
	}
}

// TestExecForkBomb: the unit's processes are bounded, all of them
// together: a script that forks until it cannot stops well short of 600.
func TestExecForkBomb(t *testing.T) {
	s := newScriptRunner(t, "python3")
	m := marker(t)
	bomb := `import os, signal
n, err = 0, 0
for _ in range(600):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        signal.pause()
        os._exit(0)
    n += 1
print(n, err)
`
	out, err := s.run(t.Context(), "python3", bomb, roomy, [2]string{"tag", m})
	f := strings.Fields(out)
	if err != nil || len(f) != 2 {
		t.Fatalf("%q, %v", out, err)
	}
	if n, _ := strconv.Atoi(f[0]); n >= userop.ExecPids || f[1] != strconv.Itoa(int(unix.EAGAIN)) {
		t.Errorf("the script forked %s processes, then errno %s; want fewer than %d, then EAGAIN", f[0], f[1], userop.ExecPids)
	}
	if pids := hostProcs(m); len(pids) > 0 {
		t.Errorf("the fork bomb left %d processes behind", len(pids))
	}
}

// TestExecMemoryAllProcesses: the memory limit bounds the unit's
// processes together: six that hold 40 MiB each do not fit 128 MiB,
// though each would alone.
func TestExecMemoryAllProcesses(t *testing.T) {
	s := newScriptRunner(t, "python3")
	hog := `import os, select, signal, sys
r, w = os.pipe()
for i in range(6):
    if os.fork() == 0:
        os.close(r)
        b = b"x" * (40 << 20)
        os.write(w, b"!")
        signal.pause()
        os._exit(0)
os.close(w)
held = 0
while held < 6:
    if select.select([r], [], [], 0.05)[0]:
        b = os.read(r, 6)
        if not b:
            sys.exit("every child is gone")
        held += len(b)
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid and os.WIFSIGNALED(status):
        sys.exit("a child was killed by signal %d" % os.WTERMSIG(status))
print("six children hold 40 MiB each")
`
	l := roomy
	l.MemoryMiB = 128
	out, err := s.run(t.Context(), "python3", hog, l)
	if err == nil || !strings.Contains(err.Error(), "memory limit is 128 MiB") {
		t.Fatalf("%q, %v; want the unit to fail at its memory limit", out, err)
	}
}

// TestExecNoNetwork: a unit has no network but a loopback of its own: it
// cannot reach a listener on the host's loopback.
func TestExecNoNetwork(t *testing.T) {
	s := newScriptRunner(t, "python3")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	out, err := s.run(t.Context(), "python3", connect, roomy, [2]string{"port", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)})
	if err != nil || !strings.HasPrefix(out, "refused") {
		t.Fatalf("%q, %v; want the connection refused", out, err)
	}
	select {
	case <-accepted:
		t.Fatal("the host's listener accepted a connection from the unit")
	default:
	}
}

// connect is a Python script that connects to 127.0.0.1:--port and says
// how that went.
const connect = `import socket, sys
port = int(sys.argv[1].split("=")[1])
try:
    socket.create_connection(("127.0.0.1", port), timeout=30).close()
    print("connected")
except OSError as e:
    print("refused", e.errno)
`

// TestExecNoNamespacesNoKeyring: a unit can make no namespace of its own
// (a user namespace's root is a door to much of the kernel) and cannot
// use the kernel keyring (not namespaced: a key would outlive the unit
// and greet the next one given its user id).
func TestExecNoNamespacesNoKeyring(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the seccomp filter is for amd64 and arm64")
	}
	s := newScriptRunner(t, "python3")
	calls := `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = dict(a[2:].split("=") for a in sys.argv[1:])
def errno(r):
    return 0 if r >= 0 else ctypes.get_errno()
print("unshare", errno(libc.syscall(int(nr["unshare"]), 0x10000000)))
print("add_key", errno(libc.syscall(int(nr["add_key"]), b"user", b"braid", b"x", 1, -2)))
`
	out, err := s.run(t.Context(), "python3", calls, roomy,
		[2]string{"unshare", strconv.Itoa(unix.SYS_UNSHARE)}, [2]string{"add_key", strconv.Itoa(unix.SYS_ADD_KEY)})
	want := fmt.Sprintf("unshare %d\nadd_key %d\n", unix.EPERM, unix.EPERM)
	if err != nil || out != want {
		t.Fatalf("%q, %v; want %q", out, err, want)
	}
}

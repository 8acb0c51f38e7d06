package netem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The namespaces of the two hosts.
const (
	NSA = "braid-a"
	NSB = "braid-b"
)

// netnsDir is where `ip netns` keeps its named namespaces.
const netnsDir = "/run/netns"

// ip runs the ip command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("netem: the ip command (iproute2) is needed: %w", err)
		}
		return fmt.Errorf("netem: ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// nsExists reports whether the named namespace exists.
func nsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// removeNS kills the processes still in the named namespace and deletes
// it. A namespace that is not there is no error.
func removeNS(name string) error {
	if !nsExists(name) {
		return nil
	}
	killIn(name)
	return ip("netns", "del", name)
}

// killIn kills every process in the named namespace and waits briefly for
// them to go.
func killIn(name string) {
	pids := nsPids(name)
	for _, pid := range pids {
		if pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(nsPids(name)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// nsPids lists the processes in the named namespace.
func nsPids(name string) []int {
	out, err := exec.Command("ip", "netns", "pids", name).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}

// InNS runs f on an OS thread that has joined the named network namespace;
// sockets f opens stay in that namespace wherever they are used later.
// The thread goes back to its own namespace afterwards and lives on, or,
// if it cannot, is discarded: a thread left in a bed's namespace would put
// the whole process there in the eyes of `ip netns pids` when it is the
// main thread (which Go never ends), and a bed's teardown kills such
// processes; and a child process started from it, whose PR_SET_PDEATHSIG
// (Command) is tied to the thread that started it, would die with it.
func InNS(name string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // unlocked only once back home: else the thread dies with this goroutine
		home, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("netem: this thread's namespace: %w", err)
			return
		}
		defer unix.Close(home)
		fd, err := unix.Open(filepath.Join(netnsDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netem: namespace %s: %w", name, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netem: enter namespace %s: %w", name, err)
			return
		}
		err = f()
		if unix.Setns(home, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// sysctl writes a sysctl (dotted name) in the named namespace.
func sysctl(ns, key, val string) error {
	return InNS(ns, func() error {
		p := "/proc/sys/" + strings.ReplaceAll(key, ".", "/")
		if err := os.WriteFile(p, []byte(val), 0); err != nil {
			return fmt.Errorf("netem: %s: sysctl %s=%s: %w", ns, key, val, err)
		}
		return nil
	})
}

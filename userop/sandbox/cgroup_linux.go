package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// limits are what a unit's cgroup bounds.
type limits struct {
	memory int64
	pids   int
	cpus   float64
}

// cgroups makes a cgroup per unit under the worker's own.
type cgroups interface {
	// create makes the cgroup called name with l, removing a stale one
	// of that name first (its owner died).
	create(name string, l limits) (cgroup, error)
}

// cgroup is one unit's cgroup.
type cgroup interface {
	// prepare sets attr so that the process starts in the cgroup where
	// the kernel can (v2), and returns what to call once the process
	// started, or failed to.
	prepare(attr *syscall.SysProcAttr) (started func(), err error)
	// add moves pid, and its threads, into the cgroup unless it started
	// there.
	add(pid int) error
	// events reports whether the memory limit killed a process and
	// whether a fork failed at the pids limit.
	events() (oom, pidsMax bool)
	// remove kills every process left in the cgroup and removes it.
	remove() error
}

// cpuPeriod is the CFS period of a unit's CPU quota, in µs.
const cpuPeriod = 100_000

// findCgroups finds the cgroup hierarchy with memory, pids and cpu
// controllers the worker can delegate: v2 where it has them, else v1.
func findCgroups() (cgroups, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	paths, err := readProcCgroup()
	if err != nil {
		return nil, err
	}
	v2, err2 := newV2(mounts, paths)
	if err2 == nil {
		return v2, nil
	}
	v1, err1 := newV1(mounts, paths)
	if err1 == nil {
		return v1, nil
	}
	return nil, fmt.Errorf("sandbox: no cgroup hierarchy with the memory, pids and cpu controllers to bound units: v2: %v; v1: %v", err2, err1)
}

// mount is a line of /proc/self/mountinfo: where a filesystem is, the
// path of its root within it, its type and its superblock options.
type mount struct {
	point, root, fstype string
	options             []string
}

func readMountinfo() ([]mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	var out []mount
	for line := range strings.Lines(string(b)) {
		pre, post, ok := strings.Cut(strings.TrimSpace(line), " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		out = append(out, mount{point: unescape(f[4]), root: unescape(f[3]), fstype: g[0], options: strings.Split(g[2], ",")})
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and
// backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readProcCgroup maps each v1 controller, and "" for v2, to this
// process's cgroup path.
func readProcCgroup() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			out[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	return out, nil
}

// dirOf is the directory of cgroup path in the hierarchy mounted as m.
func dirOf(m mount, path string) string {
	rel, ok := strings.CutPrefix(path, m.root)
	if !ok {
		rel = path
	}
	return filepath.Join(m.point, rel)
}

func writeFile(dir, file, v string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
		return fmt.Errorf("sandbox: cgroup %s: %w", file, err)
	}
	return nil
}

// counter reads the value of key in a flat-keyed cgroup file such as
// memory.events ("oom_kill 2").
func counter(dir, file, key string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// procs are the processes in a cgroup directory.
func procs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// emptyTimeout bounds the wait for killed processes to leave a cgroup.
const emptyTimeout = 30 * time.Second

// killAll kills the processes in dir until none is left.
func killAll(dir string) error {
	deadline := time.Now().Add(emptyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		pids, err := procs(dir)
		if err != nil {
			return fmt.Errorf("sandbox: cgroup processes: %w", err)
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sandbox: cgroup %s still holds processes %v after %v", dir, pids, emptyTimeout)
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(wait)
	}
}

// rmdir removes a cgroup directory, waiting for the kernel to let go of
// the processes that just left it.
func rmdir(dir string) error {
	deadline := time.Now().Add(emptyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("sandbox: remove cgroup %s: %w", dir, err)
		}
		time.Sleep(wait)
	}
}

// fresh makes dir, removing a stale cgroup there first.
func fresh(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		if err := killAll(dir); err != nil {
			return err
		}
		if err := rmdir(dir); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox: make cgroup: %w", err)
	}
	return nil
}

//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// newSandbox is a Sandbox whose units' leftovers, were there any, the
// test reports and removes.
func newSandbox(t *testing.T) *Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkClean(t, s) })
	return s
}

// checkClean fails t if a process runs as a user id, or a cgroup is left
// for a user id, that no unit holds (other processes' units, running at
// once, hold theirs), and removes them.
func checkClean(t *testing.T, s *Sandbox) {
	t.Helper()
	for uid, pids := range unitProcs(s) {
		if free(s, uid) {
			t.Errorf("processes %v run as user %d, whose unit has ended", pids, uid)
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	for _, dir := range unitCgroups(s) {
		uid, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(dir), "braid-unit-"), 10, 32)
		if err == nil && free(s, uint32(uid)) {
			t.Errorf("cgroup %s is left after its unit ended", dir)
			killAll(dir)
			rmdir(dir)
		}
	}
}

// free reports whether no unit holds uid.
func free(s *Sandbox, uid uint32) bool {
	l, err := s.ids.try(uid)
	if l != nil {
		l.release()
	}
	return l != nil || err != nil
}

// unitProcs maps the user ids of s's range to the host's live processes
// that run as them.
func unitProcs(s *Sandbox) map[uint32][]int {
	out := map[uint32][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/status")
		if err != nil || bytes.Contains(b, []byte("State:\tZ")) {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				uid, _ := strconv.ParseUint(f[1], 10, 32)
				if uid >= uint64(s.cfg.FirstUID) && uid < uint64(s.cfg.FirstUID)+uint64(s.cfg.UIDs) {
					pid, _ := strconv.Atoi(filepath.Base(d))
					out[uint32(uid)] = append(out[uint32(uid)], pid)
				}
			}
		}
	}
	return out
}

// withArg are the host's live processes whose command line holds s.
func withArg(s string) []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmd, err := os.ReadFile(d + "/cmdline")
		stat, _ := os.ReadFile(d + "/status")
		if err == nil && bytes.Contains(cmd, []byte(s)) && !bytes.Contains(stat, []byte("State:\tZ")) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			out = append(out, pid)
		}
	}
	return out
}

// unitCgroups are the units' cgroups of s's hierarchy, this process's
// units' and any other's.
func unitCgroups(s *Sandbox) []string {
	var parents []string
	switch c := s.cgs.(type) {
	case *v1:
		for _, p := range c.parents {
			parents = append(parents, p)
		}
	case *v2:
		parents = append(parents, c.parent)
	}
	var out []string
	for _, p := range parents {
		m, _ := filepath.Glob(filepath.Join(p, "braid-unit-*"))
		out = append(out, m...)
	}
	return out
}

// sh runs script under /bin/sh in a unit of s, its stderr discarded.
func sh(ctx context.Context, s *Sandbox, script string, spec Spec) (string, Result, error) {
	var out bytes.Buffer
	spec.Path, spec.Args = "/bin/sh", []string{"sh", "-c", script}
	spec.Env = []string{"PATH=/usr/bin:/bin", "HOME=/work"}
	spec.Stdout = &out
	if spec.MemoryBytes == 0 {
		spec.MemoryBytes = 128 << 20
	}
	res, err := s.Run(ctx, spec)
	return out.String(), res, err
}

// TestWorld: a unit runs as a user of the range with no capability, no
// new privileges and the seccomp filter, in /work with its files, under a
// read-only root with its own hostname, /etc/passwd and writable tmpfs
// directories; its exit status comes back.
func TestWorld(t *testing.T) {
	s := newSandbox(t)
	script := `id -u; id -g; id -G; pwd; cat note; hostname; grep -c . /etc/passwd
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t' ' '
touch /x 2>/dev/null || echo root read-only
touch /usr/x 2>/dev/null || echo usr read-only
for d in /tmp /var/tmp /dev/shm /work; do touch $d/x && echo $d writable; done
ls /etc/shadow /root 2>/dev/null || echo no shadow, no root
exit 7`
	out, res, err := sh(t.Context(), s, script, Spec{Files: map[string][]byte{"note": []byte("a note\n")}})
	if err != nil || !res.Status.Exited() || res.Status.ExitStatus() != 7 {
		t.Fatalf("%v, %+v\n%s", err, res, out)
	}
	lines := strings.Split(out, "\n")
	uid, _ := strconv.ParseUint(lines[0], 10, 32)
	if uid < DefaultFirstUID || uid >= DefaultFirstUID+DefaultUIDs || lines[1] != lines[0] || lines[2] != lines[0] {
		t.Errorf("user %q, group %q, groups %q: want one id of the range for all", lines[0], lines[1], lines[2])
	}
	want := "/work\na note\nbraid-unit\n3\nCapEff: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2\n" +
		"root read-only\nusr read-only\n/tmp writable\n/var/tmp writable\n/dev/shm writable\n/work writable\nno shadow, no root\n"
	if got := strings.Join(lines[3:], "\n"); got != want {
		t.Errorf("the unit's world:\n%s\nwant:\n%s", got, want)
	}
}

// TestForkBombStopped: the classic fork bomb is held at the pids limit,
// and nothing of it is left after (checkClean).
func TestForkBombStopped(t *testing.T) {
	s := newSandbox(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, res, err := sh(ctx, s, `bomb() { bomb | bomb & }; bomb; wait`, Spec{Pids: 64})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) || !res.PidsMax {
		t.Fatalf("%v, %+v: want the bomb stopped at the pids limit", err, res)
	}
}

// TestKilled: a unit whose context ends is killed, every process of it,
// a setsid one too.
func TestKilled(t *testing.T) {
	s := newSandbox(t)
	m := fmt.Sprintf("braid-killed-%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for len(withArg(m+"-d"))+len(withArg(m+"-c")) < 2 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	var out bytes.Buffer
	_, err := s.Run(ctx, Spec{Path: "/bin/sh", Args: []string{"sh", "-c", `setsid sh -c 'sleep 1000; exit 0' "$0-d" & sh -c 'sleep 1000; exit 0' "$0-c" & wait`, m},
		MemoryBytes: 64 << 20, Stdout: &out})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the unit killed", err)
	}
	if pids := withArg(m); len(pids) > 0 {
		t.Fatalf("processes %v of the killed unit run on", pids)
	}
}

// TestStatus: how the program ended comes back: killed by a signal, or
// by the memory limit.
func TestStatus(t *testing.T) {
	s := newSandbox(t)
	if _, res, err := sh(t.Context(), s, `kill -KILL $$`, Spec{}); err != nil || !res.Status.Signaled() || res.Status.Signal() != syscall.SIGKILL || res.OOM {
		t.Errorf("%+v, %v: want killed by SIGKILL", res, err)
	}
	// 64 MiB of /dev/shm in 32 MiB: the tmpfs is full, or the OOM
	// killer kills.
	_, res, err := sh(t.Context(), s, `head -c 67108864 /dev/zero > /dev/shm/big`, Spec{MemoryBytes: 32 << 20})
	if err != nil || res.Status.Exited() && res.Status.ExitStatus() == 0 || res.Status.Signaled() && !res.OOM {
		t.Errorf("%+v, %v: want a failure at the memory limit", res, err)
	}
	// 64 MiB in a process in 32 MiB.
	_, res, err = sh(t.Context(), s, `x=$(head -c 67108864 /dev/zero | tr '\0' x)`, Spec{MemoryBytes: 32 << 20})
	if err != nil || !res.OOM {
		t.Errorf("%+v, %v: want a kill at the memory limit", res, err)
	}
}

// TestSetupErrors: a program that is not there, and a path the sandbox
// cannot show, are errors that say so.
func TestSetupErrors(t *testing.T) {
	s := newSandbox(t)
	_, err := s.Run(t.Context(), Spec{Path: "/nonexistent/program", Args: []string{"x"}, MemoryBytes: 32 << 20})
	if err == nil || !strings.Contains(err.Error(), "start /nonexistent/program: no such file or directory") {
		t.Errorf("%v", err)
	}
	if _, err := New(Config{ReadOnly: []string{"/tmp/python"}}); err == nil || !strings.Contains(err.Error(), "outside /tmp") {
		t.Errorf("a read-only path under /tmp: %v", err)
	}
}

// TestUIDsExclusive: ids are held by one unit at a time, across
// allocators (as across processes), and released.
func TestUIDsExclusive(t *testing.T) {
	dir := t.TempDir()
	a, err := newUIDs(dir, 5000, 4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newUIDs(dir, 5000, 4)
	var mu sync.Mutex
	held := map[uint32]bool{}
	var leases []*lease
	for i := range 4 {
		u := []*uids{a, b}[i%2]
		l, err := u.acquire()
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if held[l.uid] {
			t.Fatalf("uid %d handed out twice", l.uid)
		}
		held[l.uid] = true
		mu.Unlock()
		leases = append(leases, l)
	}
	if _, err := a.acquire(); !errors.Is(err, errNoUID) {
		t.Fatalf("a fifth id from a range of four: %v", err)
	}
	leases[2].release()
	if l, err := b.acquire(); err != nil || l.uid != leases[2].uid {
		t.Fatalf("after a release: %+v, %v", l, err)
	}
	for _, l := range leases {
		l.release()
	}
	if l, err := a.acquire(); err != nil || l.uid != 5000 {
		t.Fatalf("the lowest free id is not the first: %+v, %v", l, err)
	}
}

// TestConcurrentUnits: units at once get ids and cgroups of their own,
// and all of them are gone after.
func TestConcurrentUnits(t *testing.T) {
	s := newSandbox(t)
	var wg sync.WaitGroup
	uids := make([]string, 4)
	for i := range uids {
		wg.Go(func() {
			out, _, err := sh(t.Context(), s, `id -u`, Spec{})
			if err != nil {
				t.Error(err)
			}
			uids[i] = strings.TrimSpace(out)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, u := range uids {
		if seen[u] {
			t.Errorf("units at once ran as %v", uids)
		}
		seen[u] = true
	}
}

func TestUnescape(t *testing.T) {
	if got := unescape(`/a\040b\134c\011`); got != "/a b\\c\t" {
		t.Errorf("%q", got)
	}
}

// TestV2Files: on the unified hierarchy (this test fakes its files; the
// machines the tests ran on have v1) the sandbox delegates the memory,
// pids and cpu controllers and writes each unit's limits in the kernel's
// cgroup v2 format.
func TestV2Files(t *testing.T) {
	root := t.TempDir()
	w := filepath.Join(root, "w")
	os.Mkdir(w, 0o755)
	mounts := []mount{{point: root, root: "/", fstype: "cgroup2"}}
	paths := map[string]string{"": "/w"}
	os.WriteFile(filepath.Join(w, "cgroup.controllers"), []byte("cpuset io memory\n"), 0o644)
	if _, err := newV2(mounts, paths); err == nil || !strings.Contains(err.Error(), "the pids controller is not available") {
		t.Fatalf("without pids: %v", err)
	}
	os.WriteFile(filepath.Join(w, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids\n"), 0o644)
	c, err := newV2(mounts, paths)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "cgroup.subtree_control")); string(b) != "+memory +pids +cpu" {
		t.Errorf("subtree_control %q", b)
	}
	g, err := c.create("braid-unit-7", limits{memory: 128 << 20, pids: 64, cpus: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"memory.max": "134217728", "pids.max": "64", "cpu.max": "50000 100000"} {
		if b, _ := os.ReadFile(filepath.Join(w, "braid-unit-7", file)); string(b) != want {
			t.Errorf("%s: %q, want %q", file, b, want)
		}
	}
	var attr syscall.SysProcAttr
	started, err := g.prepare(&attr)
	if err != nil || !attr.UseCgroupFD || attr.CgroupFD < 0 {
		t.Fatalf("prepare: %+v, %v", attr, err)
	}
	started()
	os.WriteFile(filepath.Join(w, "braid-unit-7", "memory.events"), []byte("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n"), 0o644)
	if oom, pidsMax := g.events(); !oom || pidsMax {
		t.Errorf("events: oom %v, pids max %v", oom, pidsMax)
	}
}

// Package cpucg throttles processes with cgroup v1's cpu controller: a
// child cgroup with a CFS quota (root, Linux), as benchmarks use to
// emulate a slower machine or a worker that cannot keep up.
package cpucg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Period is the CFS period of the cgroups, in µs. A throttled process
// runs in bursts of one period's quota; 20 ms keeps the bursts short
// beside a job of a few units of a few ms each.
const Period = 20000

// MinQuota is the smallest quota New sets, in CPUs: the kernel refuses a
// cpu.cfs_quota_us below 1 ms.
const MinQuota = 1000.0 / Period

// cpuRoots are where cgroup v1's cpu controller is commonly mounted.
var cpuRoots = []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"}

// ErrUnavailable says no process can be throttled here.
var ErrUnavailable = errors.New("no writable cgroup v1 cpu controller (need root and /sys/fs/cgroup/cpu)")

// Group is a child cgroup of the cpu controller with a CPU quota.
type Group struct{ dir string }

// cpuRoot finds the mounted cpu controller we may write to.
func cpuRoot() (string, error) {
	for _, r := range cpuRoots {
		if _, err := os.Stat(filepath.Join(r, "cpu.cfs_quota_us")); err == nil && writable(r) {
			return r, nil
		}
	}
	return "", ErrUnavailable
}

func writable(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// Available says why no process can be throttled here, or nil.
func Available() error {
	_, err := cpuRoot()
	return err
}

// New makes a child cgroup, named after name and this process, limited
// to cpus CPUs (at least MinQuota).
func New(name string, cpus float64) (*Group, error) {
	root, err := cpuRoot()
	if err != nil {
		return nil, err
	}
	g := &Group{dir: filepath.Join(root, fmt.Sprintf("braid-%s-%d", name, os.Getpid()))}
	if err := os.Mkdir(g.dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("make cgroup: %w", err)
	}
	quota := int(max(cpus, MinQuota) * Period)
	if err := g.write("cpu.cfs_period_us", Period); err != nil {
		_ = g.Remove()
		return nil, err
	}
	if err := g.write("cpu.cfs_quota_us", quota); err != nil {
		_ = g.Remove()
		return nil, err
	}
	return g, nil
}

func (g *Group) write(file string, v int) error {
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(strconv.Itoa(v)), 0o644); err != nil {
		return fmt.Errorf("cgroup %s: %w", file, err)
	}
	return nil
}

// Add moves a process, all its threads, into the cgroup.
func (g *Group) Add(pid int) error { return g.write("cgroup.procs", pid) }

// Remove deletes the cgroup once its processes have exited.
func (g *Group) Remove() error {
	var err error
	for range 50 {
		if err = os.Remove(g.dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup: %w", err)
}

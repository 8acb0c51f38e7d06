package paper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// cfsPeriod is the CFS period of the workers' cgroups, in µs. A throttled
// worker runs in bursts of one period's quota; 20 ms keeps the bursts
// short beside a job of a few units of a few ms each.
const cfsPeriod = 20000

// minQuota is the smallest quota we set, in CPUs: the kernel refuses a
// cpu.cfs_quota_us below 1 ms.
const minQuota = 1000.0 / cfsPeriod

// cpuRoots are where cgroup v1's cpu controller is commonly mounted.
var cpuRoots = []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpuacct,cpu"}

// errNoCgroup says the slow worker cannot be emulated here.
var errNoCgroup = errors.New("paper: no writable cgroup v1 cpu controller (need root and /sys/fs/cgroup/cpu)")

// cgroup is a child cgroup of the cpu controller with a CPU quota.
type cgroup struct{ dir string }

// cpuRoot finds the mounted cpu controller we may write to.
func cpuRoot() (string, error) {
	for _, r := range cpuRoots {
		if _, err := os.Stat(filepath.Join(r, "cpu.cfs_quota_us")); err == nil && writable(r) {
			return r, nil
		}
	}
	return "", errNoCgroup
}

func writable(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// newCgroup makes a child cgroup limited to cpus CPUs.
func newCgroup(name string, cpus float64) (*cgroup, error) {
	root, err := cpuRoot()
	if err != nil {
		return nil, err
	}
	g := &cgroup{dir: filepath.Join(root, fmt.Sprintf("braid-paper-%s-%d", name, os.Getpid()))}
	if err := os.Mkdir(g.dir, 0o755); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("paper: make cgroup: %w", err)
	}
	quota := int(cpus * cfsPeriod)
	if err := g.write("cpu.cfs_period_us", cfsPeriod); err != nil {
		g.remove()
		return nil, err
	}
	if err := g.write("cpu.cfs_quota_us", quota); err != nil {
		g.remove()
		return nil, err
	}
	return g, nil
}

func (g *cgroup) write(file string, v int) error {
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(strconv.Itoa(v)), 0o644); err != nil {
		return fmt.Errorf("paper: cgroup %s: %w", file, err)
	}
	return nil
}

// add moves a process, all its threads, into the cgroup.
func (g *cgroup) add(pid int) error { return g.write("cgroup.procs", pid) }

// remove deletes the cgroup once its processes have exited.
func (g *cgroup) remove() error {
	var err error
	for range 50 {
		if err = os.Remove(g.dir); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("paper: remove cgroup: %w", err)
}

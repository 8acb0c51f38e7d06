package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// v1Controllers are the cgroup v1 controllers a unit's cgroup uses.
var v1Controllers = []string{"memory", "pids", "cpu"}

// v1 is cgroup v1: a directory per controller, each under the worker's
// own cgroup in that controller's hierarchy.
type v1 struct {
	parents map[string]string // controller → the worker's cgroup directory
}

func newV1(mounts []mount, paths map[string]string) (*v1, error) {
	c := &v1{parents: map[string]string{}}
	for _, name := range v1Controllers {
		i := slices.IndexFunc(mounts, func(m mount) bool { return m.fstype == "cgroup" && slices.Contains(m.options, name) })
		path, ok := paths[name]
		if i < 0 || !ok {
			return nil, fmt.Errorf("no %s controller mounted", name)
		}
		dir := dirOf(mounts[i], path)
		if err := writable(dir); err != nil {
			return nil, fmt.Errorf("%s controller: %w", name, err)
		}
		c.parents[name] = dir
	}
	return c, nil
}

// writable says why this process cannot make cgroups in dir, or nil.
func writable(dir string) error {
	if err := syscall.Access(dir, 2|1); err != nil { // W_OK|X_OK
		return fmt.Errorf("cannot make cgroups in %s: %w", dir, err)
	}
	return nil
}

func (c *v1) create(name string, l limits) (cgroup, error) {
	g := &v1Group{dirs: map[string]string{}}
	for _, ctl := range v1Controllers {
		dir := filepath.Join(c.parents[ctl], name)
		if err := fresh(dir); err != nil {
			_ = g.remove()
			return nil, err
		}
		g.dirs[ctl] = dir
	}
	if err := g.limit(l); err != nil {
		_ = g.remove()
		return nil, err
	}
	return g, nil
}

// v1Group is a unit's cgroup in each v1 controller.
type v1Group struct {
	dirs map[string]string // controller → directory
}

func (g *v1Group) limit(l limits) error {
	mem := strconv.FormatInt(l.memory, 10)
	err := errors.Join(
		writeFile(g.dirs["memory"], "memory.limit_in_bytes", mem),
		writeFile(g.dirs["pids"], "pids.max", strconv.Itoa(l.pids)),
		writeFile(g.dirs["cpu"], "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)),
		writeFile(g.dirs["cpu"], "cpu.cfs_quota_us", strconv.Itoa(int(l.cpus*cpuPeriod))),
	)
	if err != nil {
		return err
	}
	// Swap counts against the limit where the kernel accounts it.
	if _, err := os.Stat(filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
		return writeFile(g.dirs["memory"], "memory.memsw.limit_in_bytes", mem)
	}
	return nil
}

func (g *v1Group) prepare(*syscall.SysProcAttr) (func(), error) { return func() {}, nil }

func (g *v1Group) add(pid int) error {
	for _, ctl := range v1Controllers {
		if err := writeFile(g.dirs[ctl], "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

func (g *v1Group) events() (oom, pidsMax bool) {
	return counter(g.dirs["memory"], "memory.oom_control", "oom_kill") > 0, counter(g.dirs["pids"], "pids.events", "max") > 0
}

func (g *v1Group) remove() error {
	var errs []error
	for _, ctl := range v1Controllers {
		if dir, ok := g.dirs[ctl]; ok {
			errs = append(errs, killAll(dir), rmdir(dir))
		}
	}
	return errors.Join(errs...)
}

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// v2Controllers are the controllers a unit's cgroup v2 enables.
var v2Controllers = []string{"memory", "pids", "cpu"}

// workerLeaf is the cgroup v2 leaf the worker moves itself into so that
// its own cgroup may have children with controllers.
const workerLeaf = "braid-worker"

// v2 is the unified hierarchy: units' cgroups are children of the
// worker's cgroup, which must delegate the controllers to them. A cgroup
// with children cannot hold processes, so where the worker's holds only
// the worker, the worker moves itself into a leaf of its own first
// ("braid-worker"), as systemd's Delegate= expects of a service.
type v2 struct {
	parent string
}

func newV2(mounts []mount, paths map[string]string) (*v2, error) {
	i := slices.IndexFunc(mounts, func(m mount) bool { return m.fstype == "cgroup2" })
	path, ok := paths[""]
	if i < 0 || !ok {
		return nil, errors.New("no cgroup2 mounted")
	}
	dir := dirOf(mounts[i], path)
	if filepath.Base(dir) == workerLeaf { // moved there by an earlier Sandbox of this process
		dir = filepath.Dir(dir)
	}
	have, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, err
	}
	for _, c := range v2Controllers {
		if !slices.Contains(strings.Fields(string(have)), c) {
			return nil, fmt.Errorf("%s: the %s controller is not available (cgroup.controllers: %q)", dir, c, strings.TrimSpace(string(have)))
		}
	}
	if err := writable(dir); err != nil {
		return nil, err
	}
	if err := delegate(dir); err != nil {
		return nil, err
	}
	return &v2{parent: dir}, nil
}

// delegate enables the controllers for dir's children, moving this
// process into a leaf of its own if dir holds it.
func delegate(dir string) error {
	enable := "+" + strings.Join(v2Controllers, " +")
	err := writeFile(dir, "cgroup.subtree_control", enable)
	if err == nil || !errors.Is(err, unix.EBUSY) {
		return err
	}
	leaf := filepath.Join(dir, workerLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("sandbox: make cgroup: %w", err)
	}
	if err := writeFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	if err := writeFile(dir, "cgroup.subtree_control", enable); err != nil {
		return fmt.Errorf("%w (the cgroup %s holds other processes than the worker: give the worker a cgroup of its own, e.g. systemd's Delegate=yes)", err, dir)
	}
	return nil
}

func (c *v2) create(name string, l limits) (cgroup, error) {
	g := &v2Group{dir: filepath.Join(c.parent, name)}
	if err := fresh(g.dir); err != nil {
		return nil, err
	}
	err := errors.Join(
		writeFile(g.dir, "memory.max", strconv.FormatInt(l.memory, 10)),
		writeFile(g.dir, "pids.max", strconv.Itoa(l.pids)),
		writeFile(g.dir, "cpu.max", fmt.Sprintf("%d %d", int(l.cpus*cpuPeriod), cpuPeriod)),
	)
	if _, serr := os.Stat(filepath.Join(g.dir, "memory.swap.max")); serr == nil {
		err = errors.Join(err, writeFile(g.dir, "memory.swap.max", "0"))
	}
	if err != nil {
		_ = g.remove()
		return nil, err
	}
	return g, nil
}

// v2Group is a unit's cgroup in the unified hierarchy.
type v2Group struct {
	dir string
}

// prepare has the process start in the cgroup (CLONE_INTO_CGROUP).
func (g *v2Group) prepare(attr *syscall.SysProcAttr) (func(), error) {
	fd, err := unix.Open(g.dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open cgroup: %w", err)
	}
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return func() { unix.Close(fd) }, nil
}

func (g *v2Group) add(int) error { return nil }

func (g *v2Group) events() (oom, pidsMax bool) {
	return counter(g.dir, "memory.events", "oom_kill") > 0, counter(g.dir, "pids.events", "max") > 0
}

func (g *v2Group) remove() error {
	_ = writeFile(g.dir, "cgroup.kill", "1") // Linux 5.14; killAll covers older kernels
	return errors.Join(killAll(g.dir), rmdir(g.dir))
}

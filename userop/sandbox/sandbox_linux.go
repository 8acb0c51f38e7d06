package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sandbox runs programs each in a world of its own. Safe for concurrent
// use; Run's calls share nothing but the ranges they take ids from.
type Sandbox struct {
	cfg Config
	log *slog.Logger
	ids *uids
	cgs cgroups
}

// Defaults of Config.
const (
	DefaultFirstUID = 1879048192
	DefaultUIDs     = 65536
	DefaultLockDir  = "/run/braid/uids"
)

// systemPaths are the programs and libraries every unit sees.
var systemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcPaths are the files of /etc a program may need to start, resolve
// names or verify certificates: nothing private.
var etcPaths = []string{"alternatives", "ca-certificates", "ca-certificates.conf", "gai.conf", "host.conf",
	"hosts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf",
	"os-release", "perl", "protocols", "resolv.conf", "services", "ssl", "timezone"}

// DefaultReadOnly are the host paths every unit sees, read-only: the
// system's programs and libraries and the public files of /etc, those
// that exist.
func DefaultReadOnly() []string {
	out := slices.Clone(systemPaths)
	for _, p := range etcPaths {
		out = append(out, "/etc/"+p)
	}
	py, _ := filepath.Glob("/etc/python3*")
	return append(out, py...)
}

// New returns a Sandbox, having run an empty unit to check that this
// machine can: it says what is missing (root, a kernel feature, cgroup
// controllers) if not.
func New(cfg Config) (*Sandbox, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("sandbox: needs root, to give each unit a user id, namespaces and a cgroup of its own")
	}
	if cfg.FirstUID == 0 {
		cfg.FirstUID = DefaultFirstUID
	}
	if cfg.UIDs == 0 {
		cfg.UIDs = DefaultUIDs
	}
	if cfg.FirstUID < 1000 || uint64(cfg.FirstUID)+uint64(cfg.UIDs) > 1<<31 {
		return nil, fmt.Errorf("sandbox: user ids %d to %d: want a range above 1000 and below 2^31", cfg.FirstUID, uint64(cfg.FirstUID)+uint64(cfg.UIDs)-1)
	}
	if cfg.LockDir == "" {
		cfg.LockDir = DefaultLockDir
	}
	cfg.ReadOnly = append(DefaultReadOnly(), cfg.ReadOnly...)
	for _, p := range cfg.ReadOnly {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" || p == base || strings.HasPrefix(p, base+"/") {
			return nil, fmt.Errorf("sandbox: read-only path %q: want a clean absolute path outside %s", p, base)
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	for _, ns := range []string{"pid", "mnt", "net", "ipc", "uts", "cgroup"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return nil, fmt.Errorf("sandbox: the kernel has no %s namespaces: %w", ns, err)
		}
	}
	ids, err := newUIDs(cfg.LockDir, cfg.FirstUID, cfg.UIDs)
	if err != nil {
		return nil, err
	}
	cgs, err := findCgroups()
	if err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg, log: cfg.Logger, ids: ids, cgs: cgs}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	if _, err := s.run(ctx, Spec{MemoryBytes: 64 << 20}, true); err != nil {
		return nil, fmt.Errorf("sandbox: a trial unit failed: %w", err)
	}
	return s, nil
}

// probeTimeout bounds New's trial unit.
const probeTimeout = time.Minute

// Run runs spec's program in a world of its own and returns how it
// ended once every process of the unit is gone and its cgroup removed.
// The error is not nil if the unit could not be set up or ctx ended
// first (then it wraps ctx.Err() and the unit was killed).
func (s *Sandbox) Run(ctx context.Context, spec Spec) (Result, error) {
	if spec.Path == "" || len(spec.Args) == 0 {
		return Result{}, errors.New("sandbox: no program to run")
	}
	return s.run(ctx, spec, false)
}

func (s *Sandbox) run(ctx context.Context, spec Spec, probe bool) (res Result, err error) {
	l := limits{memory: spec.MemoryBytes, pids: spec.Pids, cpus: spec.CPUs}
	if l.memory <= 0 {
		return res, errors.New("sandbox: no memory limit")
	}
	if l.pids <= 0 {
		l.pids = DefaultPids
	}
	if l.cpus <= 0 {
		l.cpus = 1
	}
	id, err := s.ids.acquire()
	if err != nil {
		return res, err
	}
	defer id.release()
	cg, err := s.cgs.create("braid-unit-"+strconv.FormatUint(uint64(id.uid), 10), l)
	if err != nil {
		return res, err
	}
	defer func() {
		if rerr := cg.remove(); rerr != nil {
			s.log.Error("unit cgroup left behind", "err", rerr)
			err = errors.Join(err, rerr)
		}
	}()
	c := initConfig{UID: id.uid, Path: spec.Path, Args: spec.Args, Env: spec.Env, Files: spec.Files,
		ReadOnly: s.cfg.ReadOnly, TmpBytes: l.memory, FileSize: uint64(max(spec.FileSize, 0)), Network: spec.Network, Probe: probe}
	if spec.CPUTime > 0 {
		c.CPUTime = uint64((spec.CPUTime + time.Second - 1) / time.Second)
	}
	rep, err := s.start(ctx, cg, spec, c)
	res.OOM, res.PidsMax = cg.events()
	if err != nil {
		return res, err
	}
	res.Status = syscall.WaitStatus(rep.Status)
	return res, nil
}

// start starts the unit's init in its namespaces and cgroup, hands it c,
// and waits for it and its report.
func (s *Sandbox) start(ctx context.Context, cg cgroup, spec Spec, c initConfig) (initReport, error) {
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return initReport{}, fmt.Errorf("sandbox: %w", err)
	}
	defer cfgW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		return initReport{}, fmt.Errorf("sandbox: %w", err)
	}
	defer repR.Close()
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{initArg0}, Env: []string{"GOMAXPROCS=1"}, Dir: "/",
		Stdin: spec.Stdin, Stdout: spec.Stdout, Stderr: spec.Stderr, ExtraFiles: []*os.File{cfgR, repW},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: cloneflags(c.Network), Pdeathsig: syscall.SIGKILL},
		WaitDelay:   time.Second, // the unit's processes are gone when the init is: its stdio are closed
	}
	started, err := cg.prepare(cmd.SysProcAttr)
	if err == nil {
		err = cmd.Start()
		started()
	}
	cfgR.Close()
	repW.Close()
	if err != nil {
		return initReport{}, fmt.Errorf("sandbox: start the unit's init: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	if err := cg.add(cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return initReport{}, err
	}
	werr := json.NewEncoder(cfgW).Encode(c)
	cfgW.Close()
	b, _ := io.ReadAll(repR)
	err = cmd.Wait()
	if ctx.Err() != nil {
		return initReport{}, fmt.Errorf("sandbox: the unit was killed: %w", ctx.Err())
	}
	var rep initReport
	if jerr := json.Unmarshal(b, &rep); jerr != nil {
		// A signal ended the init before it could report: the memory
		// limit's OOM killer, which may pick it as well as the program.
		// The unit ended with it.
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return initReport{Status: int(ws)}, nil
		}
		return rep, fmt.Errorf("sandbox: the unit's init ended without a report (%v; %v, %q)", err, werr, bytes.TrimSpace(b))
	}
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// cloneflags are the namespaces of a unit: all but the user namespace,
// and the network's only if it does not share the host's.
func cloneflags(network bool) uintptr {
	f := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP)
	if !network {
		f |= syscall.CLONE_NEWNET
	}
	return f
}

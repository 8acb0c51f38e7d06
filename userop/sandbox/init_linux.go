package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// initArg0 is os.Args[0] of a process started as a sandbox's init.
const initArg0 = "braid-sandbox-init"

// The init's file descriptors besides stdio: the config it reads, and the
// report it writes once.
const (
	configFD = 3
	reportFD = 4
)

// initConfig is what the worker tells a unit's init, as JSON on configFD.
type initConfig struct {
	UID      uint32
	Path     string
	Args     []string
	Env      []string
	Files    map[string][]byte
	ReadOnly []string
	TmpBytes int64
	CPUTime  uint64 // RLIMIT_CPU in seconds; 0: none
	FileSize uint64 // RLIMIT_FSIZE in bytes; 0: none
	Network  bool   // the host's network: no loopback of its own to bring up
	Probe    bool   // build the unit's world and run nothing
}

// initReport is what the init tells the worker, as JSON on reportFD: the
// program's wait status, or why the unit could not run.
type initReport struct {
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

func init() {
	if len(os.Args) == 1 && os.Args[0] == initArg0 {
		os.Exit(initMain())
	}
}

// initMain is the unit's init, pid 1 of its PID namespace: it builds the
// unit's world, runs the program, reaps what the program leaves to it,
// and exits with the program, whereupon the kernel kills every process
// left in the namespace.
func initMain() int {
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, initArg0+": runs only as the init of a sandbox's PID namespace")
		return 2
	}
	report := os.NewFile(reportFD, "report")
	status, err := initRun()
	r := initReport{Status: int(status)}
	if err != nil {
		r.Error = err.Error()
	}
	if err := json.NewEncoder(report).Encode(r); err != nil {
		return 1
	}
	return 0
}

func initRun() (syscall.WaitStatus, error) {
	for _, fd := range []int{configFD, reportFD} {
		syscall.CloseOnExec(fd) // the program gets stdio only
	}
	// Nothing of the unit, which runs as another user, may trace or read
	// the init, root with the host's files open until it pivots.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return 0, fmt.Errorf("sandbox: %w", err)
	}
	unix.Umask(0)
	var c initConfig
	if err := json.NewDecoder(os.NewFile(configFD, "config")).Decode(&c); err != nil {
		return 0, fmt.Errorf("sandbox: the init's config: %w", err)
	}
	if err := build(&c); err != nil {
		return 0, err
	}
	if err := unix.Sethostname([]byte("braid-unit")); err != nil {
		return 0, fmt.Errorf("sandbox: hostname: %w", err)
	}
	if !c.Network {
		if err := loopbackUp(); err != nil {
			return 0, err
		}
	}
	if c.Probe {
		return 0, confine(&c)
	}
	return runProgram(&c)
}

// runProgram starts the program as the unit's user, confined, and waits
// for it, reaping every orphan the namespace hands the init meanwhile.
func runProgram(c *initConfig) (syscall.WaitStatus, error) {
	// no_new_privs and seccomp are the calling thread's: the program is
	// forked from this one.
	runtime.LockOSThread()
	if err := confine(c); err != nil {
		return 0, err
	}
	attr := &syscall.ProcAttr{Dir: "/work", Env: c.Env, Files: []uintptr{0, 1, 2}, Sys: &syscall.SysProcAttr{
		Setsid:     true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: c.UID, Gid: c.UID, Groups: []uint32{}},
	}}
	pid, err := syscall.ForkExec(c.Path, c.Args, attr)
	if err != nil {
		return 0, fmt.Errorf("sandbox: start %s: %w", c.Path, err)
	}
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return 0, fmt.Errorf("sandbox: wait: %w", err)
		case got == pid:
			return ws, nil
		}
	}
}

// confine sets no_new_privs, the seccomp filter and the rlimits the
// program inherits. The init is subject to them too, harmlessly: it
// writes no file and spends little CPU.
func confine(c *initConfig) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	if err := installSeccomp(); err != nil {
		return err
	}
	set := func(resource int, v uint64) error {
		if v == 0 {
			return nil
		}
		if err := unix.Setrlimit(resource, &unix.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("sandbox: rlimit %d: %w", resource, err)
		}
		return nil
	}
	return errors.Join(set(unix.RLIMIT_CPU, c.CPUTime), set(unix.RLIMIT_FSIZE, c.FileSize), unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}))
}

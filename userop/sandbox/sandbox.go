package sandbox

import (
	"errors"
	"io"
	"log/slog"
	"syscall"
	"time"
)

// Config configures a Sandbox. Zero values mean the defaults.
type Config struct {
	// FirstUID and UIDs are the user ids units run as, one per unit
	// running at once on the host (default 1879048192 and 65536: a range
	// systemd leaves unused, above its container ranges). The group id is
	// the user id.
	FirstUID uint32
	UIDs     uint32
	// LockDir holds a lock file per user id in use, so that workers on
	// one host never hand out the same id at once (default /run/braid/uids).
	LockDir string
	// ReadOnly are host paths a unit sees, read-only, at the same place
	// (default DefaultReadOnly(); extra ones are added to it, e.g. an
	// interpreter installed in /opt). A path under /tmp cannot be given.
	ReadOnly []string
	// Logger receives the sandbox's logs (default: discard).
	Logger *slog.Logger
}

// Spec is one program to run and its limits.
type Spec struct {
	// Path is the program, as the unit sees it (a host path under one of
	// the read-only paths); Args its arguments, Args[0] included; Env its
	// whole environment. It starts in /work.
	Path string
	Args []string
	Env  []string
	// Files are written to /work, read-only, before the program starts.
	Files map[string][]byte
	// Stdin, Stdout and Stderr are the program's standard streams (nil:
	// /dev/null). Other processes of the unit may hold them too; they are
	// closed when the unit ends.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// MemoryBytes bounds the memory of all the unit's processes and files
	// together (required).
	MemoryBytes int64
	// Pids bounds the unit's processes and threads, the init's few
	// included (default DefaultPids).
	Pids int
	// CPUs bounds the unit's CPU time per wall-clock second (default 1).
	CPUs float64
	// CPUTime and FileSize are each process's RLIMIT_CPU and
	// RLIMIT_FSIZE (0: none).
	CPUTime  time.Duration
	FileSize int64
	// Network shares the host's network; without it the unit has only a
	// loopback of its own.
	Network bool
}

// DefaultPids is Spec.Pids's default.
const DefaultPids = 512

// Result is how a unit's program ended.
type Result struct {
	// Status is the program's wait status.
	Status syscall.WaitStatus
	// OOM says the memory limit killed a process of the unit.
	OOM bool
	// PidsMax says a fork or thread failed at the pids limit.
	PidsMax bool
}

// ErrUnsupported says units cannot be sandboxed on this platform.
var ErrUnsupported = errors.New("sandbox: scripts are sandboxed on Linux only")

package userop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/braidhq/braid/userop/sandbox"
)

// runExec runs one unit of a script operation: the interpreter the
// worker's owner allowed, on the script, in a sandbox of its own
// (userop/sandbox): its own user id, PID, mount, IPC, UTS and network
// namespaces, a cgroup bounding its memory, processes and CPU, an empty
// /work (HOME) and /tmp, a minimal environment, rlimits on CPU time and
// file size; killed, with every process it started, at the unit's wall
// time or when its output passes the limit (docs/user-ops.md).
func (r *Runtime) runExec(ctx context.Context, op string, digest [32]byte, inv Invocation, input []byte) ([]byte, error) {
	path, ok := r.cfg.Exec[inv.Interpreter]
	if !ok || r.sandbox == nil {
		return nil, fmt.Errorf("this worker does not allow %s scripts (braid worker --allow-exec)", inv.Interpreter)
	}
	if inv.Network && !r.cfg.ExecNetwork {
		return nil, errors.New("the operation asks for the network, which this worker gives no script (braid worker --exec-network)")
	}
	script, err := r.script(ctx, digest)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, inv.Timeout)
	defer cancel()
	std := newStdio(inv.MaxOutput, cancel)
	res, err := r.sandbox.Run(ctx, sandbox.Spec{
		Path:  path,
		Args:  append([]string{path, scriptPath}, inv.Args(op)[1:]...),
		Env:   []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/work", "TMPDIR=/tmp", "LANG=C.UTF-8"},
		Files: map[string][]byte{filepath.Base(scriptPath): script},
		Stdin: bytes.NewReader(input), Stdout: &std.out, Stderr: &std.err,
		MemoryBytes: int64(inv.MemoryMiB) << 20,
		Pids:        ExecPids,
		CPUs:        1,
		CPUTime:     inv.Timeout.Truncate(time.Second) + time.Second, // one that computes all along is stopped by either
		FileSize:    inv.MaxOutput,
		Network:     inv.Network,
	})
	return std.out.buf.Bytes(), std.execOutcome(ctx, err, inv, res)
}

// scriptPath is where a unit finds its script.
const scriptPath = "/work/.script"

// ExecPids bounds the processes and threads of a script unit (its
// sandbox's init's few included).
const ExecPids = 256

// execOutcome turns how a script ended into the unit's error, or nil.
func (s *stdio) execOutcome(ctx context.Context, err error, inv Invocation, res sandbox.Result) error {
	switch {
	case s.out.over:
		return fmt.Errorf("the output passed its limit of %d bytes", inv.MaxOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the unit ran past its time limit of %v and was killed%s", inv.Timeout, s.err.text())
	case ctx.Err() != nil:
		return fmt.Errorf("the unit was stopped: %w", ctx.Err())
	case err != nil:
		return err
	case res.Status.Exited() && res.Status.ExitStatus() == 0:
		return nil
	}
	hint := ""
	switch {
	case res.OOM || bytes.Contains(s.err.head, []byte("MemoryError")) || bytes.Contains(s.err.head, []byte("out of memory")) ||
		bytes.Contains(s.err.head, []byte("Cannot allocate memory")):
		hint = fmt.Sprintf(" (the operation's memory limit is %d MiB)", inv.MemoryMiB)
	case res.PidsMax:
		hint = fmt.Sprintf(" (it reached the unit's limit of %d processes and threads)", ExecPids)
	}
	if !res.Status.Signaled() {
		return fmt.Errorf("exit status %d%s%s", res.Status.ExitStatus(), hint, s.err.text())
	}
	switch res.Status.Signal() {
	case syscall.SIGXCPU:
		hint = fmt.Sprintf(" (its CPU time limit, %v)", inv.Timeout.Truncate(time.Second)+time.Second)
	case syscall.SIGXFSZ:
		hint = fmt.Sprintf(" (it wrote a file past %d bytes)", inv.MaxOutput)
	}
	return fmt.Errorf("killed by %v%s%s", res.Status.Signal(), hint, s.err.text())
}

// script gets a script by digest, fetched once and kept in memory.
func (r *Runtime) script(ctx context.Context, digest [32]byte) ([]byte, error) {
	r.mu.Lock()
	b, ok := r.scripts[digest]
	r.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := r.cfg.Fetch(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("fetching the operation's script %x: %w", digest[:6], err)
	}
	if sha256.Sum256(b) != digest {
		return nil, fmt.Errorf("the script fetched for digest %x has another digest: not run", digest[:6])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.scripts) >= maxScripts {
		clear(r.scripts)
	}
	r.scripts[digest] = b
	return b, nil
}

// maxScripts bounds the scripts kept in memory.
const maxScripts = 64

// interpreterRoots are the directories a unit must see, besides the
// system's, to run the interpreters: the install prefix (the directory
// above bin/) of each one, or of its symlink's target, that lies outside
// sandbox.DefaultReadOnly().
func interpreterRoots(exec map[string]string) []string {
	var out []string
	for _, p := range exec {
		paths := []string{p}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			paths = append(paths, real)
		}
		for _, p := range paths {
			if root := filepath.Dir(filepath.Dir(p)); !visible(p) && !slices.Contains(out, root) {
				out = append(out, root)
			}
		}
	}
	slices.Sort(out)
	return out
}

// visible reports whether a unit sees path without adding a directory.
func visible(path string) bool {
	return slices.ContainsFunc(sandbox.DefaultReadOnly(), func(ro string) bool {
		return path == ro || strings.HasPrefix(path, ro+"/")
	})
}

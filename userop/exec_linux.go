package userop

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// runExec runs one unit of a script operation: the interpreter the
// worker's owner allowed, on the script, in an empty directory of its own
// that is removed after, with a minimal environment, as Config.RunAs,
// limited in address space, CPU time and file size, killed with its
// process group at the unit's wall time or when its output passes the
// limit. This is confinement, not a sandbox: the script can do what the
// user it runs as can (docs/user-ops.md).
func (r *Runtime) runExec(ctx context.Context, op string, digest [32]byte, inv Invocation, input []byte) ([]byte, error) {
	path, ok := r.cfg.Exec[inv.Interpreter]
	if !ok {
		return nil, fmt.Errorf("this worker does not allow %s scripts (braid worker --allow-exec)", inv.Interpreter)
	}
	script, err := r.script(ctx, digest)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(r.cfg.ScratchDir, "braid-unit-")
	if err != nil {
		return nil, fmt.Errorf("a directory for the unit: %w", err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, ".script")
	if err := os.WriteFile(file, script, 0o444); err != nil {
		return nil, err
	}
	if c := r.cfg.RunAs; c != nil {
		if err := os.Chown(dir, int(c.Uid), int(c.Gid)); err != nil {
			return nil, fmt.Errorf("giving the unit's directory to uid %d: %w", c.Uid, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, inv.Timeout)
	defer cancel()
	std := newStdio(inv.MaxOutput, cancel)
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, fmt.Errorf("scripts need prlimit (util-linux) to be limited: %w", err)
	}
	args := append(limits(inv), "--", path, file)
	cmd := exec.Command(prlimit, append(args, inv.Args(op)[1:]...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(input), &std.out, &std.err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: r.cfg.RunAs}
	cmd.WaitDelay = time.Second // a child that keeps stdout open does not hold the unit
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", inv.Interpreter, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL) // the group: what it started, too
	}()
	err = cmd.Wait()
	close(done)
	return std.out.buf.Bytes(), std.execOutcome(ctx, err, inv, cmd.ProcessState)
}

// limits are prlimit's options for a unit: address space (the memory
// limit), CPU time (the wall time, rounded up: a process that computes
// all along is stopped by either), the files it writes (the output
// limit), no core dumps. prlimit, already running as the script's user,
// lowers its own limits and executes the interpreter.
func limits(inv Invocation) []string {
	return []string{
		fmt.Sprintf("--as=%d", uint64(inv.MemoryMiB)<<20),
		fmt.Sprintf("--cpu=%d", uint64(inv.Timeout.Seconds())+1),
		fmt.Sprintf("--fsize=%d", inv.MaxOutput),
		"--core=0",
	}
}

// execOutcome turns how a script ended into the unit's error, or nil.
func (s *stdio) execOutcome(ctx context.Context, err error, inv Invocation, ps *os.ProcessState) error {
	switch {
	case s.out.over:
		return fmt.Errorf("the output passed its limit of %d bytes", inv.MaxOutput)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("the unit ran past its time limit of %v and was killed%s", inv.Timeout, s.err.text())
	case ctx.Err() != nil:
		return fmt.Errorf("the unit was stopped: %w", ctx.Err())
	case err == nil:
		return nil
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		why := ""
		switch ws.Signal() {
		case syscall.SIGXCPU:
			why = fmt.Sprintf(" (its CPU time limit, %v)", inv.Timeout.Round(time.Second)+time.Second)
		case syscall.SIGXFSZ:
			why = fmt.Sprintf(" (it wrote a file past %d bytes)", inv.MaxOutput)
		}
		return fmt.Errorf("killed by %v%s%s", ws.Signal(), why, s.err.text())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		hint := ""
		if bytes.Contains(s.err.head, []byte("MemoryError")) || bytes.Contains(s.err.head, []byte("out of memory")) ||
			bytes.Contains(s.err.head, []byte("Cannot allocate memory")) {
			hint = fmt.Sprintf(" (the operation's memory limit is %d MiB)", inv.MemoryMiB)
		}
		return fmt.Errorf("exit status %d%s%s", ee.ExitCode(), hint, s.err.text())
	}
	return err
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

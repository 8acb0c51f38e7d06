package scale

import (
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"syscall"
)

// Server priority. In a deployment the workers run on other machines and
// take no CPU from the server; here the simulated fleet shares the
// machine's cores with it and, answering every unit, spends about as much
// CPU as the server. With Config.ServerNice below zero the server runs at
// that nice value, so that it gets a core whenever it has work and the
// fleet runs on what is left: closer to a server with its machine to
// itself, though the fleet still takes the CPU the server leaves, and
// starved it can miss its liveness bound. The result says which nice the
// server ran at (Result.ServerNice).

// DefaultServerNice is the server's nice value unless Config.ServerNice
// says otherwise: CFS gives a thread at -10 about nine times the CPU of
// one at 0 when both want it.
const DefaultServerNice = -10

// serverNice is the nice value the server can run at: want, or 0 (the
// bench's own) when this process may not raise a priority, which it says
// on log: a user without CAP_SYS_NICE or room in RLIMIT_NICE still gets a
// run, and its result says at which priority.
func serverNice(want int, log io.Writer) int {
	if want >= 0 {
		return want
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, want); err != nil {
		fmt.Fprintf(log, "scale: the server runs at the bench's priority, not at nice %d: %v (raising a priority needs CAP_SYS_NICE or RLIMIT_NICE)\n", want, err)
		return 0
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, 0); err != nil {
		fmt.Fprintf(log, "scale: the server runs at the bench's priority: this thread's back to 0: %v\n", err)
		return 0
	}
	return want
}

// startNiced starts cmd at nice value nice, which its threads inherit: the
// child is forked by a thread that takes that value for the fork and goes
// back to 0 after it. The thread must live on: the server's
// PR_SET_PDEATHSIG is tied to the thread that forked it, not to this
// process. nice 0 is a plain Start.
func startNiced(cmd *exec.Cmd, nice int) error {
	if nice == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice); err != nil {
		return fmt.Errorf("scale: server at nice %d (--server-nice 0 runs it as the bench): %w", nice, err)
	}
	err := cmd.Start()
	if rerr := syscall.Setpriority(syscall.PRIO_PROCESS, 0, 0); rerr != nil && err == nil {
		// The fleet's goroutines would run on this thread at the
		// server's priority: refuse the run rather than measure that.
		_ = cmd.Process.Kill()
		return fmt.Errorf("scale: this thread's priority back to 0: %w", rerr)
	}
	return err
}

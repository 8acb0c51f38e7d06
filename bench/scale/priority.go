package scale

import (
	"fmt"
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

// startNiced starts cmd at nice value nice, which its threads inherit: the
// child is forked by a thread that took that value for the purpose and
// ends with the call. nice 0 is a plain Start.
func startNiced(cmd *exec.Cmd, nice int) error {
	if nice == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, its nice changed, exits with this
		// goroutine rather than run other goroutines.
		runtime.LockOSThread()
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, 0, nice); err != nil {
			errc <- fmt.Errorf("scale: server at nice %d (--server-nice 0 runs it as the bench): %w", nice, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

package netem

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Command returns a command that runs name with args inside the named
// namespace (through `ip netns exec`). It is killed if this process dies
// (PR_SET_PDEATHSIG), and when ctx ends it gets SIGTERM, then SIGKILL 3 s
// later.
func Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Second
	return cmd
}

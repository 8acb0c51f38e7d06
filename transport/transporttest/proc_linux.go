package transporttest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd's process when this one dies,
// even if it is stopped (SIGKILL works on stopped processes).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

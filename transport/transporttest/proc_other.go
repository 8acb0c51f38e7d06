//go:build !linux

package transporttest

import "os/exec"

// dieWithParent is a no-op where the kernel cannot do it: a peer process
// still exits when its stdin closes, unless it is stopped.
func dieWithParent(*exec.Cmd) {}

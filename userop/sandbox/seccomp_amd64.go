//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the architecture the seccomp filter admits.
const auditArch = unix.AUDIT_ARCH_X86_64

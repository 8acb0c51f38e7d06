package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a unit: new namespaces (which would
// hand the unit a user namespace's root, and the kernel's surface behind
// it), the kernel keyring (one per user id, not namespaced: a unit could
// leave a key for the next unit given the same id), io_uring, bpf,
// perf events and userfaultfd (surfaces that scripts do not need).
var deniedSyscalls = []uint32{
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_ADD_KEY, unix.SYS_KEYCTL, unix.SYS_REQUEST_KEY,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
}

// namespaceFlags are clone's flags that make new namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// x32Bit marks amd64's x32 system calls, which share its audit arch.
const x32Bit = 0x40000000

// seccompFilter is the unit's filter: a foreign architecture kills the
// process; x32 calls, deniedSyscalls and clone with namespaceFlags fail
// with EPERM; clone3, whose flags a filter cannot read, fails with
// ENOSYS, so that libc falls back to clone; all else is allowed.
func seccompFilter(arch uint32) []unix.SockFilter {
	const (
		ld  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret = unix.BPF_RET | unix.BPF_K
	)
	n := len(deniedSyscalls)
	// The layout, by index: 0 ld arch, 1 check it, 2 ld nr, 3 x32,
	// 4..4+n-1 denied, then clone3, clone, ld flags, jset, and the four
	// returns.
	clone3 := 4 + n
	allow := clone3 + 4
	eperm, enosys, kill := allow+1, allow+2, allow+3
	to := func(from, target int) uint8 { return uint8(target - from - 1) }
	p := []unix.SockFilter{
		{Code: ld, K: 4}, // seccomp_data.arch
		{Code: jeq, K: arch, Jt: 0, Jf: to(1, kill)},
		{Code: ld, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32Bit, Jt: to(3, eperm)},
	}
	for i, nr := range deniedSyscalls {
		p = append(p, unix.SockFilter{Code: jeq, K: nr, Jt: to(4+i, eperm)})
	}
	p = append(p,
		unix.SockFilter{Code: jeq, K: unix.SYS_CLONE3, Jt: to(clone3, enosys)},
		unix.SockFilter{Code: jeq, K: unix.SYS_CLONE, Jf: to(clone3+1, allow)},
		unix.SockFilter{Code: ld, K: 16}, // the low half of seccomp_data.args[0], clone's flags
		unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: namespaceFlags, Jt: to(clone3+3, eperm)},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		unix.SockFilter{Code: ret, K: unix.SECCOMP_RET_KILL_PROCESS},
	)
	return p
}

// installSeccomp installs the unit's filter on the calling thread, which
// must have no_new_privs set; the processes it forks inherit it.
func installSeccomp() error {
	if auditArch == 0 {
		return nil
	}
	f := seccompFilter(auditArch)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("sandbox: seccomp: %w", err)
	}
	return nil
}

package tcpconn

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// FollowNetns lets goroutines the caller starts open their sockets where
// the caller would: a socket belongs to the network namespace of the
// thread that creates it, and a goroutine started by one locked to a
// thread in a namespace of its own (a test's dialer, say) may run on a
// thread in another. follow, called first thing by such a goroutine,
// checks its thread's namespace and, if it is not the caller's, locks the
// goroutine to the thread for good (the thread ends with the goroutine)
// and moves the thread into the caller's. release, once those goroutines
// are done, lets go of the caller's namespace. If the caller's cannot be
// read, follow does nothing.
func FollowNetns() (follow func() error, release func()) {
	const self = "/proc/thread-self/ns/net"
	var mine unix.Stat_t
	fd, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil && unix.Fstat(fd, &mine) != nil {
		unix.Close(fd)
		err = unix.EBADF
	}
	if err != nil {
		return func() error { return nil }, func() {}
	}
	return func() error {
		runtime.LockOSThread()
		var here unix.Stat_t
		if unix.Stat(self, &here) == nil && here.Dev == mine.Dev && here.Ino == mine.Ino {
			runtime.UnlockOSThread()
			return nil
		}
		return unix.Setns(fd, unix.CLONE_NEWNET) // never unlocked: the thread dies with the goroutine
	}, func() { unix.Close(fd) }
}

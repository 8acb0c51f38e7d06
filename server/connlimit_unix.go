//go:build unix

package server

import "syscall"

// openFileLimit is the process's limit on open files (its soft
// RLIMIT_NOFILE, which Go raises to the hard one at start), or 0.
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}

package scale

import (
	"fmt"
	"syscall"
)

// raiseFileLimit raises this process's limit of open files (RLIMIT_NOFILE)
// to at least want, lifting the hard limit too if it may (root); the
// server child inherits it. It returns the limit now in force.
func raiseFileLimit(want uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("scale: getrlimit: %w", err)
	}
	if lim.Cur >= want {
		return lim.Cur, nil
	}
	next := lim
	next.Cur = want
	if next.Max < want {
		next.Max = want
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err == nil {
		return want, nil
	}
	next = lim // not root: as far as the hard limit goes
	next.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &next); err != nil {
		return lim.Cur, fmt.Errorf("scale: setrlimit: %w", err)
	}
	return next.Cur, nil
}

// filesNeeded is a generous bound on the descriptors a run of workers ×
// threads needs in this process: per worker a listener and a connection per
// stream (tcpn; a worker stops listening once its association is up), the
// HTTP pool and slack.
func filesNeeded(workers, threads int) uint64 {
	return uint64(workers*(threads+1)) + 4096
}

package scheduler_test

import (
	"syscall"
	"time"
)

// threadCPU is the calling thread's CPU time (user and system), for
// benchmarks on a machine shared with other work: 0 if it cannot be read.
func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !linux

package schedsim

import "time"

// threadCPU is 0 where a thread's CPU time is not read: the core's time is
// then its wall time.
func threadCPU() time.Duration { return 0 }

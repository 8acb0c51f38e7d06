package sctp_test

import (
	"syscall"
	"testing"
)

// cpuMeter reports the process's CPU time per payload byte, a figure that
// is steadier than throughput on a shared machine.
type cpuMeter struct{ start float64 }

func startCPU() cpuMeter { return cpuMeter{start: cpuSeconds()} }

func (m cpuMeter) report(b *testing.B, bytes int64) {
	if bytes > 0 {
		b.ReportMetric((cpuSeconds()-m.start)*1e9/float64(bytes), "cpu-ns/B")
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

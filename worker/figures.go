package worker

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// figures are the machine facts a worker advertises.
type figures struct {
	cores    int
	clockMHz int
	ramBytes int64
	diskFree int64
}

// readFigures reads the machine's figures; unknown ones stay zero.
func readFigures(dir string) figures {
	f := figures{cores: runtime.NumCPU(), clockMHz: cpuMHz(), ramBytes: memTotal()}
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil {
		f.diskFree = int64(st.Bavail) * int64(st.Bsize)
	}
	return f
}

// changed reports whether g differs from f enough to re-announce: any
// count, or disk space by more than a tenth.
func (f figures) changed(g figures) bool {
	if f.cores != g.cores || f.clockMHz != g.clockMHz || f.ramBytes != g.ramBytes {
		return true
	}
	d := f.diskFree - g.diskFree
	return d*10 > f.diskFree || -d*10 > f.diskFree
}

func procField(path, key string) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func cpuMHz() int {
	v, _ := strconv.ParseFloat(procField("/proc/cpuinfo", "cpu MHz"), 64)
	return int(v)
}

// minHold is the least default Config.HoldBytes.
const minHold = 64 << 20

// holdBytes is what the worker can hold for Config.HoldBytes n: n if
// positive, nothing if negative, else a quarter of the memory this process
// could have now, what is available plus what it holds (at least
// minHold), so that its own units do not shrink the figure.
func holdBytes(n int64) int64 {
	switch {
	case n > 0:
		return n
	case n < 0:
		return 0
	}
	return max((memAvailable()+selfRSS())/4, minHold)
}

// rehold reports whether a new default hold figure differs from the old
// by more than a quarter, enough to tell the servers.
func rehold(old, now int64) bool {
	d := now - old
	return d*4 > old || -d*4 > old
}

// selfRSS is this process's resident memory, 0 if unknown.
func selfRSS() int64 { return procBytes("/proc/self/status", "VmRSS") }

// procBytes reads a "KEY: N kB" field of a /proc file in bytes, 0 if
// there is none.
func procBytes(path, key string) int64 {
	fields := strings.Fields(procField(path, key))
	if len(fields) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(fields[0], 10, 64)
	return kb << 10
}

// memAvailable is the memory a new allocation can get: /proc/meminfo's
// MemAvailable, or less if the cgroup at /sys/fs/cgroup (v2, or v1's
// memory controller; a container's own, in a container) limits it to
// less; 0 if unknown.
func memAvailable() int64 {
	avail := procBytes("/proc/meminfo", "MemAvailable")
	if avail == 0 {
		return 0
	}
	for _, f := range [][2]string{
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	} {
		limit, err1 := readInt(f[0])
		used, err2 := readInt(f[1])
		if err1 == nil && err2 == nil && limit-used < avail {
			avail = max(limit-used, 0)
		}
	}
	return avail
}

// readInt reads a file holding one integer ("max" is not one).
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func memTotal() int64 { return procBytes("/proc/meminfo", "MemTotal") }

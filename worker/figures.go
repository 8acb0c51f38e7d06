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

func memTotal() int64 {
	fields := strings.Fields(procField("/proc/meminfo", "MemTotal"))
	if len(fields) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(fields[0], 10, 64)
	return kb << 10
}

package benchout

import (
	"os"
	"strconv"
	"strings"
)

// LoadAvg is the machine's one-minute load average, from /proc/loadavg (0
// where the system does not say). Runs record it beside their results, and
// tests that judge a rate only on a host that is not overloaded read it.
func LoadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	fs := strings.Fields(string(b))
	if err != nil || len(fs) == 0 {
		return 0
	}
	f, _ := strconv.ParseFloat(fs[0], 64)
	return f
}

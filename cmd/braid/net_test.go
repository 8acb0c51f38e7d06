package main

import (
	"strings"
	"testing"
)

// Bad specs and misuse of braid net and bench transport --net are usage
// errors that say why, before anything is set up (no root needed).
func TestNetUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"net", "up", "loss=1"}, "percentage"},
		{[]string{"net", "up"}, "braid net up SPEC"},
		{[]string{"net", "frob"}, "unknown net command"},
		{[]string{"net", "down", "now"}, "no argument"},
		{[]string{"bench", "transport", "--net", "rtt=1ms", "--listen", "127.0.0.1:1"}, "--net runs both sides"},
		{[]string{"bench", "transport", "--net", "rate=fast"}, "rate=fast"},
		{[]string{"bench", "transport", "--net", "rtt=1ms", "--net-path", "1"}, "paths 0 to 0"},
		{[]string{"bench", "transport", "--net", "rtt=1ms", "--net-wait", "-1s"}, "--net-wait -1s"},
		{[]string{"bench", "net", "--min-time", "-1s"}, "--min-time -1s"},
		{[]string{"bench", "net", "--runs", "5", "--max-runs", "3", "--min-time", "1s"}, "--max-runs 3 is below --runs 5"},
	} {
		code, _, stderr := runCmd(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("braid %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
	code, stdout, _ := runCmd(t, "net", "-h")
	if code != 0 || !strings.Contains(stdout, "rtt=50ms") {
		t.Errorf("braid net -h: exit %d, %q", code, stdout)
	}
}

package benchout

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCommitOf(t *testing.T) {
	rev := "1f7fe46a3c0e9d2b8f00112233445566778899aa"
	for _, c := range []struct {
		settings []debug.BuildSetting
		linked   string
		want     string
	}{
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}, "", rev},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}, "", rev + "-dirty"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: rev}}, "v1.2.3", rev}, // Go's record wins
		{nil, "1f7fe46-dirty", "1f7fe46-dirty"},                                  // make build outside Go's VCS stamping
		{[]debug.BuildSetting{{Key: "GOOS", Value: "linux"}}, "", Unknown},
	} {
		if got := commitOf(c.settings, c.linked); got != c.want {
			t.Errorf("commitOf(%v, %q) = %q, want %q", c.settings, c.linked, got, c.want)
		}
	}
}

// TestHere: the running process's provenance names this Go, this kernel
// and this command line.
func TestHere(t *testing.T) {
	p := Here()
	if p.Go != runtime.Version() {
		t.Errorf("Go %q, want %q", p.Go, runtime.Version())
	}
	if p.Commit == "" {
		t.Error("empty commit: want a revision or unknown")
	}
	if strings.Join(p.Flags, " ") != strings.Join(os.Args[1:], " ") {
		t.Errorf("flags %q, want %q", p.Flags, os.Args[1:])
	}
	if runtime.GOOS != "linux" {
		return
	}
	out, err := exec.Command("uname", "-r").Output()
	if err != nil {
		t.Skipf("uname: %v", err)
	}
	if want := strings.TrimSpace(string(out)); p.Kernel != want {
		t.Errorf("kernel %q, want uname -r's %q", p.Kernel, want)
	}
}

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// `go build ./cmd/braid` in a clone, the README's own command, makes a
// braid that says the commit it was built from, as make build's does.
// (Go records none in a git worktree, whose .git is a file, nor with
// -buildvcs=false: the test asks for the default, auto.)
func TestVersionOfGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds braid from a clone")
	}
	rev, err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	clone := filepath.Join(t.TempDir(), "braid")
	if out, err := exec.Command("git", "clone", "--quiet", "..", clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	build := exec.Command("go", "build", "-o", "braid", "./cmd/braid")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(clone, "braid"), "version").Output()
	if want := "braid " + string(rev[:12]) + "\n"; err != nil || string(out) != want {
		t.Errorf("braid version: %q, %v; want %q", out, err, want)
	}
}

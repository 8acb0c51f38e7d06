package version

import (
	"os"
	"regexp"
	"testing"
)

// TestMakefileStampsThisPackage: make build's -ldflags -X names this
// package's Version. The linker ignores an -X whose package is not in the
// binary, so a stale path would build an unstamped braid without a word.
func TestMakefileStampsThisPackage(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-X ([^=\s]+)\.Version=`).FindAllSubmatch(mk, -1)
	if len(m) == 0 {
		t.Fatal("the Makefile sets no -X ….Version")
	}
	const want = "github.com/braidhq/braid/version"
	for _, x := range m {
		if got := string(x[1]); got != want {
			t.Errorf("the Makefile stamps %s.Version, want %s.Version", got, want)
		}
	}
}

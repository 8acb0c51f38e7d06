package srcstat

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFingerprint builds a module-like tree and checks which changes move
// the fingerprint: a build input's, not a doc's, a test file's or one in
// a hidden, docs or testdata directory.
func TestFingerprint(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 99 {
		write(fmt.Sprintf("pkg%d/x.go", i), "package x\n")
	}
	if _, err := Fingerprint(root); err == nil {
		t.Fatal("99 files: want an error (not the module's root)")
	}
	for _, f := range []string{"go.mod", "ui/app.js", "README.md", "pkg0/x_test.go", "docs/a.txt", "pkg1/testdata/in", ".git/HEAD"} {
		write(f, "1\n")
	}
	before, err := Fingerprint(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file  string
		moves bool
	}{
		{"README.md", false}, {"pkg0/x_test.go", false}, {"docs/a.txt", false}, {"docs/new.go", false},
		{"pkg1/testdata/in", false}, {".git/HEAD", false},
		{"pkg2/x.go", true}, {"go.mod", true}, {"ui/app.js", true}, {"pkg3/new.go", true},
	} {
		write(c.file, "changed, longer\n")
		now, err := Fingerprint(root)
		if err != nil {
			t.Fatal(err)
		}
		if moved := now != before; moved != c.moves {
			t.Errorf("after writing %s: fingerprint changed %v, want %v", c.file, moved, c.moves)
		}
		before = now
	}
	// The modification time alone moves it too.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(root, "pkg4/x.go"), later, later); err != nil {
		t.Fatal(err)
	}
	if now, _ := Fingerprint(root); now == before {
		t.Error("a build input's new modification time left the fingerprint as it was")
	}
}

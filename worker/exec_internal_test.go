package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInterpreterPath: --allow-exec finds interpreters on PATH or takes
// NAME=/PATH, and refuses one the user scripts run as could not run.
func TestInterpreterPath(t *testing.T) {
	if p, err := interpreterPath("sh", true); err != nil || !filepath.IsAbs(p) {
		t.Fatalf("sh: %q, %v", p, err)
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(private, "python3")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		entry     string
		forOthers bool
		want      string
	}{
		{"python3=" + shim, true, "cannot be run by other users"},
		{"python3=relative/python3", false, "not an absolute path"},
		{"/usr/bin/python3", false, "want a program's name"},
		{"no-such-interpreter-here", false, "not found"},
	} {
		if _, err := interpreterPath(c.entry, c.forOthers); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.entry, err, c.want)
		}
	}
	if p, err := interpreterPath("python3="+shim, false); err != nil || p != shim {
		t.Fatalf("a private interpreter for the worker's own user: %q, %v", p, err)
	}
}

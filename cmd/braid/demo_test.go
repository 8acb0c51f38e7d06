package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The demo saves the whole-image blur beside the tiled one, says which
// file is which, and prints ids in full.
func TestDemoOutputs(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "demo", "--transport", "tcpn", "--repeat", "2", "--tiles", "2x2", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if stderr != "" { // make demo ends quietly: no warning of workers stopping with the server
		t.Errorf("a clean run logged:\n%s", stderr)
	}
	tiled, err1 := os.ReadFile(filepath.Join(out, "tiled-blur.png"))
	whole, err2 := os.ReadFile(filepath.Join(out, "whole-blur.png"))
	if err1 != nil || err2 != nil || !bytes.Equal(tiled, whole) {
		t.Errorf("tiled and whole-image blur: %v, %v, equal %v", err1, err2, bytes.Equal(tiled, whole))
	}
	for _, name := range []string{"blur-repeat-manifest.json", "blur-repeat-unit0.gif", "tiled-blur.png", "whole-blur.png"} {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + ` +\S`).MatchString(stdout) {
			t.Errorf("the demo does not say what %s is:\n%s", name, stdout)
		}
	}
	if n := len(regexp.MustCompile(`uploaded \S+ \(\d+ bytes\) as [0-9a-f]{64}\n`).FindAllString(stdout, -1)); n != 2 {
		t.Errorf("%d uploads with full ids, want 2:\n%s", n, stdout)
	}
	if !strings.Contains(stdout, ", 2 units)") || !strings.Contains(stdout, ", 1 unit)") {
		t.Errorf("no unit count in:\n%s", stdout)
	}
}

// With --repeat 1 the repeated blur is a job of one unit, whose result is
// the unit's output itself: the demo saves it and names no manifest.
func TestDemoRepeatOne(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "demo", "--transport", "tcpn", "--repeat", "1", "--tiles", "2x2", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "blur-repeat-unit0.gif"))
	if err != nil || !bytes.HasPrefix(b, []byte("GIF")) {
		t.Errorf("blur-repeat-unit0.gif is not a GIF: %v, %.16q", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "blur-repeat-manifest.json")); !os.IsNotExist(err) {
		t.Errorf("a manifest was saved for a job of one unit: %v", err)
	}
	if strings.Contains(stdout, "manifest") || !regexp.MustCompile(`(?m)^  blur-repeat-unit0\.gif +\S`).MatchString(stdout) {
		t.Errorf("the list of outputs should name the unit's output and no manifest:\n%s", stdout)
	}
}

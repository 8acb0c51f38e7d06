package paper

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/braidhq/braid/internal/benchout"
)

// TestRunInfoProvenance: run.json records the run's commit, kernel, Go and
// flags, and a run.json without them (an older run) reads as unknown.
func TestRunInfoProvenance(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Config: Config{Out: dir, Units: []int{1}}}
	if err := r.writeInfo(); err != nil {
		t.Fatal(err)
	}
	var info runInfo
	if err := readJSON(filepath.Join(dir, "run.json"), &info); err != nil {
		t.Fatal(err)
	}
	if p := info.Provenance; p == nil || p.Go != runtime.Version() || p.Commit == "" || p.Kernel == "" {
		t.Fatalf("run.json provenance %+v, want this process's", p)
	}

	if err := os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"units": [1], "runs": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(Config{Out: dir}); err != nil {
		t.Fatal(err)
	}
	var old runInfo
	if err := readJSON(filepath.Join(dir, "run.json"), &old); err != nil {
		t.Fatal(err)
	}
	if p := old.Provenance; p == nil || p.Commit != benchout.Unknown || p.Go != benchout.Unknown {
		t.Errorf("an older run redrawn says %+v, want unknown, not the redrawing build", p)
	}
}

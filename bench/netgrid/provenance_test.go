package netgrid

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/benchout"
)

// readProvenance reads results.json's provenance as the file has it.
func readProvenance(t *testing.T, dir string) *benchout.Provenance {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Provenance *benchout.Provenance `json:"provenance"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Provenance
}

// TestWriteRecordsProvenance: a new run's results.json says which code,
// kernel, Go and flags made it, and redrawing it (Load, Write: `bench net
// --render`) keeps that, not the redrawing build's.
func TestWriteRecordsProvenance(t *testing.T) {
	dir := t.TempDir()
	run := Record{Command: "braid bench net --rtt 20ms,50ms", Started: time.Now(), Settings: []string{"sctp", "tcp", "ptcp:8"},
		Default: "sctp", Floor: 0.9, Results: results()}
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	p := readProvenance(t, dir)
	if p == nil || p.Go != runtime.Version() || p.Commit == "" || p.Kernel == "" || p.Flags == nil {
		t.Fatalf("provenance %+v, want this process's", p)
	}

	p.Commit, p.Note = "1f7fe46", "set by the test"
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	back.Provenance = p
	if err := Write(dir, back); err != nil {
		t.Fatal(err)
	}
	again, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, again); err != nil {
		t.Fatal(err)
	}
	if got := readProvenance(t, dir); got.Commit != "1f7fe46" || got.Note != "set by the test" {
		t.Errorf("after a redraw: %+v, want the run's own", got)
	}
}

// TestLoadOlderRun: a results.json from before provenance was recorded
// redraws as unknown, never as the redrawing build.
func TestLoadOlderRun(t *testing.T) {
	dir := t.TempDir()
	old := `{"command": "braid bench net", "settings": ["sctp"], "default": "sctp", "floor": 0.9, "results": []}`
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	if p := readProvenance(t, dir); p == nil || p.Commit != benchout.Unknown || p.Go != benchout.Unknown {
		t.Errorf("provenance %+v, want unknown", p)
	}
}

package paper_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/paper"
	"github.com/braidhq/braid/internal/srcstat"
)

// braidBin is a braid binary built without the race detector: the quick
// run's worker processes are that, so that they compute at their usual
// speed while the server, in this process, is checked for races.
var braidBin string

// TestSourcesStatted ties this package's cached result to the module's
// sources, which braidBin is built from (package srcstat).
func TestSourcesStatted(t *testing.T) { srcstat.Module(t, "../..") }

func TestMain(m *testing.M) {
	unchanged := srcstat.Watch("../..")
	dir, err := os.MkdirTemp("", "braid-paper-test-*")
	if err != nil {
		panic(err)
	}
	braidBin = filepath.Join(dir, "braid")
	if out, err := exec.Command("go", "build", "-o", braidBin, "../../cmd/braid").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building braid: %v\n%s", err, out)
		os.Exit(1)
	}
	code := unchanged(m.Run())
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	out := t.TempDir()
	cfg := paper.Config{Exe: braidBin, ExeArgs: []string{"worker"}, Out: out, Quick: true,
		Timeout: 4 * time.Minute, JobTimeout: time.Minute, NoSlow: os.Geteuid() != 0, Log: tlog{t}}
	res, err := paper.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Figures) < 7 {
		t.Fatalf("%d figures", len(res.Figures))
	}
	for _, fr := range res.Figures {
		for _, ext := range []string{".csv", ".json", ".svg"} {
			if _, err := os.Stat(filepath.Join(out, fr.ID+ext)); err != nil {
				t.Error(err)
			}
		}
		checkCSV(t, filepath.Join(out, fr.ID+".csv"), len(fr.Missing) == 0)
	}
	if b, err := os.ReadFile(filepath.Join(out, "REPORT.md")); err != nil || !strings.Contains(string(b), "Fig. 4") {
		t.Errorf("REPORT.md: %v", err)
	}
	if res.Floor.ParallelMS <= 0 {
		t.Errorf("floor %+v: no measurement of the op on all threads at once", res.Floor)
	}
	// The floor section's CPU accounting sees the worker processes.
	cpu := 0.0
	for _, fr := range res.Figures {
		for _, rec := range fr.Records {
			if rec.Line == "2 workers × 2 tcpn streams" && rec.Units == 20 {
				cpu = max(cpu, rec.WorkerCPUMS)
			}
		}
	}
	if cpu <= 0 {
		t.Errorf("no worker CPU time recorded for 2 workers × 2 tcpn streams at 20 units")
	}
}

// checkCSV parses a figure's CSV and checks its rows have numbers.
func checkCSV(t *testing.T, path string, complete bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if complete && len(rows) < 2 {
		t.Errorf("%s: no data rows", path)
	}
	for _, row := range rows[1:] {
		units := row[2]
		if rows[0][2] != "units" {
			units = row[8]
		}
		if n, err := strconv.Atoi(units); err != nil || n < 1 {
			t.Errorf("%s: bad units %q", path, units)
		}
	}
}

// tlog sends the run's progress lines to the test log, timed, so that a
// run out of time shows where the time went.
type tlog struct{ t *testing.T }

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("%s %s", time.Now().Format("15:04:05.000"), bytes.TrimRight(p, "\n"))
	return len(p), nil
}

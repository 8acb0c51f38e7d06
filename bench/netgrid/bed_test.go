package netgrid_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/bench/netgrid"
	"github.com/braidhq/braid/internal/srcstat"
	"github.com/braidhq/braid/netem"
)

// braidBin is a braid binary built for TestRunBed (empty where the bed
// cannot run or under -short).
var braidBin string

// TestSourcesStatted ties this package's cached result to the module's
// sources, which braidBin is built from (package srcstat).
func TestSourcesStatted(t *testing.T) { srcstat.Module(t, "../..") }

func TestMain(m *testing.M) {
	if netem.Check() != nil || isShort() {
		os.Exit(m.Run())
	}
	unchanged := srcstat.Watch("../..")
	dir, err := os.MkdirTemp("", "braid-netgrid-test-*")
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

// isShort reads -short before m.Run parses the flags.
func isShort() bool {
	for _, a := range os.Args[1:] {
		if a == "-test.short" || a == "-test.short=true" {
			return true
		}
	}
	return false
}

// TestRunBed is the grid's short form through the real bed (root): one
// lossy condition, one TCP setting under the hosts' cubic and one sctp
// setting, one small job each. Each runs in a bed of its own congestion
// control, and the files say so.
func TestRunBed(t *testing.T) {
	if braidBin == "" {
		t.Skip("needs root, /dev/net/tun and no -short (the emulated WAN)")
	}
	own, err := netgrid.MachineCC()
	if err != nil {
		t.Fatal(err)
	}
	var settings []netgrid.Setting
	for _, v := range []string{"tcp@cubic", "sctp@reno"} {
		s, err := netgrid.ParseSetting(v)
		if err != nil {
			t.Fatal(err)
		}
		settings = append(settings, s)
	}
	out := t.TempDir()
	var log strings.Builder
	cfg := netgrid.Config{
		Conditions: []netgrid.Condition{{RTT: 20 * time.Millisecond, Loss: 1}}, Sizes: []int{64 << 10}, Settings: settings,
		Rate: "100M", Exe: braidBin, Out: out, Command: "TestRunBed", Floor: 0.9, BedWait: 5 * time.Minute, Log: &log,
		// Eight small units a job: done in a second or two; the budget
		// only bounds a starved machine.
		Job: netgrid.Job{Workers: 1, Threads: 2, Bytes: 512 << 10, MinUnits: 8, MaxUnits: 8, Budget: 2 * time.Minute, Runs: 1},
	}
	run, err := netgrid.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("the grid's log:\n%s", log.String())
	want := map[string]string{"tcp@cubic": "cubic", "sctp@reno": own}
	if len(run.Results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(run.Results), len(want), run.Results)
	}
	for _, r := range run.Results {
		if cc, ok := want[r.Setting]; !ok || r.HostCC != cc {
			t.Errorf("%s ran in a bed with cc=%s; want %s", r.Setting, r.HostCC, cc)
		}
		if r.Cut || r.Done != 8 || r.UnitsPerSec <= 0 {
			t.Errorf("%s: %d of %d units, cut %v, %v units/s", r.Setting, r.Done, r.Units, r.Cut, r.UnitsPerSec)
		}
	}
	back, err := netgrid.Load(out)
	if err != nil || back.HostCC != own || back.Provenance == nil || back.Provenance.Kernel == "" {
		t.Errorf("results.json: host_cc %q, provenance %+v, %v", back.HostCC, back.Provenance, err)
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil || !strings.Contains(string(md), "| `tcp@cubic` |") || !strings.Contains(string(md), "| `sctp@reno` |") {
		t.Errorf("RESULTS.md lacks a row per setting (%v):\n%s", err, md)
	}
}

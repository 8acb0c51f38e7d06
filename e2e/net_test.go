package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/braidhq/braid/netem"
)

// TestJobsOverEmulatedLink runs `braid bench overhead --net`: a server
// process in one network namespace, worker processes in another, joined by
// two emulated paths (root, Linux; skips elsewhere), and jobs of real units
// through them on ptcp and tcpn. Every job must finish. The workers
// advertise their second path's address as a route (--advertise-routes):
// ptcp's association must use that path too, tcpn's must not. The figures
// are `bench overhead`'s business, not this test's.
func TestJobsOverEmulatedLink(t *testing.T) {
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	out, stderr := runOnBed(t, "bench", "overhead", "--net", "rtt=4ms,rate=200M; rtt=4ms,rate=100M",
		"--transport", "ptcp,tcpn", "--units", "8", "--size", "262144", "--runs", "1", "--json")
	var rs []struct {
		Transport   string  `json:"transport"`
		Units       int     `json:"units"`
		UnitsPerSec float64 `json:"units_per_sec"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("results %q: %v", out, err)
	}
	if len(rs) != 2 || rs[0].Transport != "ptcp" || rs[1].Transport != "tcpn" {
		t.Fatalf("results %+v, want one run of ptcp and one of tcpn", rs)
	}
	for _, r := range rs {
		if r.Units != 8 || !(r.UnitsPerSec > 0) {
			t.Errorf("%s: %+v", r.Transport, r)
		}
	}
	// After each transport's run the bench prints what each path carried,
	// "net path 1: a→b N packets, ...".
	var second []int
	for _, line := range strings.Split(stderr, "\n") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "net path 1: a→b %d packets", &n); err == nil {
			second = append(second, n)
		}
	}
	if len(second) != 2 || second[0] < 100 || second[1] > 10 {
		t.Errorf("packets server to workers over the second path, ptcp then tcpn: %v; want ptcp's at least 100, tcpn's at most 10\n%s",
			second, stderr)
	}
}

// TestNetGrid runs a small `braid bench net` (root, Linux; skips
// elsewhere): two conditions, one unit size, the default sctp and sctp
// with one flow, two jobs each (--min-time, which one job's makespan falls
// short of, up to --max-runs). Every job must finish within its budget,
// and the run's files must hold what it measured.
func TestNetGrid(t *testing.T) {
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	out := t.TempDir()
	runOnBed(t, "bench", "net", "--rtt", "10ms", "--loss", "0,1", "--size", "262144",
		"--settings", "sctp,sctp:1", "--bytes", "2097152", "--budget", "2m", "--runs", "1", "--min-time", "1h", "--max-runs", "2", "--out", out)
	var got []string
	for _, r := range readGrid(t, out) {
		got = append(got, fmt.Sprintf("%v/%v/%s/%d", r.RTTMS, r.LossPct, r.Setting, r.Run))
		if r.Units != 8 || r.Done != 8 || r.Cut || !(r.UnitsPerSec > 0) || !(r.P99MS > 10) {
			t.Errorf("%+v: want 8 units done, a rate, and a p99 above the 10 ms RTT", r)
		}
	}
	if want := "10/0/sctp@auto/0 10/0/sctp@auto/1 10/0/sctp:1/0 10/0/sctp:1/1 10/1/sctp@auto/0 10/1/sctp@auto/1 10/1/sctp:1/0 10/1/sctp:1/1"; strings.Join(got, " ") != want {
		t.Errorf("results %v, want %s", got, want)
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil || !strings.Contains(string(md), "| 10ms, 1% loss |") {
		t.Errorf("RESULTS.md (%v):\n%s", err, md)
	}
}

// runOnBed runs braid with args, a command that brings up the WAN test
// bed, waiting its turn while another package's test has the bed, and
// returns its stdout and stderr; it fails t if the command fails.
func runOnBed(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	for {
		var out, errOut bytes.Buffer
		cmd := exec.CommandContext(ctx, braidBin, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil && strings.Contains(errOut.String(), "a test bed is already up") && ctx.Err() == nil {
			time.Sleep(time.Second)
			continue
		}
		if err != nil {
			t.Fatalf("braid %s: %v\n%s", strings.Join(args[:2], " "), err, errOut.String())
		}
		return out.String(), errOut.String()
	}
}

// TestNetGridCut: a job past `bench net`'s budget is cancelled and rated
// by the units it finished within the budget, over the budget (root,
// Linux). One unit of 4 MiB over one reno flow at 50 ms and 1% loss
// takes about 12 s; the budget is 2 s.
func TestNetGridCut(t *testing.T) {
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	out := t.TempDir()
	runOnBed(t, "bench", "net", "--rtt", "50ms", "--loss", "1", "--size", "4194304", "--settings", "sctp:1",
		"--bytes", "16777216", "--budget", "2s", "--runs", "1", "--out", out)
	rs := readGrid(t, out)
	if len(rs) != 1 {
		t.Fatalf("%d results, want 1", len(rs))
	}
	if r := rs[0]; !r.Cut || r.Seconds != 2 || r.Units != 4 || r.Done != 0 || r.UnitsPerSec != 0 {
		t.Errorf("%+v: want a cut job of 4 units, none done, rated over 2 s", r)
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil || !strings.Contains(string(md), "| `sctp:1` | **0.00*** (0.00–0.00) |") {
		t.Errorf("RESULTS.md (%v) does not mark the cut job:\n%s", err, md)
	}
}

// gridResult is a result of `bench net`'s results.json.
type gridResult struct {
	RTTMS       float64 `json:"rtt_ms"`
	LossPct     float64 `json:"loss_pct"`
	Setting     string  `json:"setting"`
	Run         int     `json:"run"`
	Units       int     `json:"units"`
	Done        int     `json:"done"`
	Cut         bool    `json:"cut"`
	Seconds     float64 `json:"seconds"`
	UnitsPerSec float64 `json:"units_per_sec"`
	P99MS       float64 `json:"p99_ms"`
}

// readGrid reads the results of a `bench net` run written to dir.
func readGrid(t *testing.T, dir string) []gridResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Results []gridResult `json:"results"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	return run.Results
}

// TestJobSurvivesCutPath runs `braid bench overhead --net … --cut 1@1s`:
// jobs on ptcp between a server and workers joined by two emulated paths,
// the second black-holed a second into the job (root, Linux). The
// associations, whose connections take both paths, must end within the
// liveness bound, the server must take their units back and reach the
// workers again by the path that is up, and the job must finish. Before
// each connection was watched on its own, the associations lived on with
// streams whose blocks were lost, and a job of 400 such units did not
// finish in five minutes.
func TestJobSurvivesCutPath(t *testing.T) {
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	out, stderr := runOnBed(t, "bench", "overhead", "--net", "rtt=4ms,rate=200M; rtt=4ms,rate=100M",
		"--transport", "ptcp", "--units", "100", "--size", "1048576", "--runs", "1", "--cut", "1@1s", "--json")
	var rs []struct {
		Units     int    `json:"units"`
		Cut       string `json:"cut"`
		CutMissed bool   `json:"cut_missed"`
		Requeued  int    `json:"requeued"`
		AssocLost int    `json:"assoc_lost"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("results %q: %v", out, err)
	}
	if len(rs) != 1 || rs[0].Units != 100 || rs[0].Cut != "1@1s" {
		t.Fatalf("results %+v, want one job of 100 units with path 1 cut", rs)
	}
	r := rs[0]
	if r.CutMissed {
		t.Fatalf("the job ended before the cut: %+v", r)
	}
	if r.Requeued+r.AssocLost == 0 {
		t.Errorf("no association ended over the cut path: %+v\n%s", r, stderr)
	}
	t.Logf("%+v", r)
}

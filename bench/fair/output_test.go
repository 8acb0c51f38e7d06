package fair

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func result(loss float64, side, against string, run int, braid, flow float64) Result {
	r := Result{LossPct: loss, Side: side, Against: against, Flows: 1, Run: run, Started: t0, Load: [2]float64{10, 20},
		WindowS: 28, SideMbps: braid, FlowMbps: []float64{flow}, Ratio: braid / flow, Jain: Jain([]float64{braid, flow}),
		Timeline: [][]float64{{braid, braid}, {flow, flow}}}
	return r
}

// TestWrite: the files of a run, the medians and spreads in RESULTS.md,
// which settings meet the goal on the clean path, and a round trip
// through results.json.
func TestWrite(t *testing.T) {
	rec := Record{Command: "braid bench fair --runs 3", Started: t0, RTTMS: 50, Rate: "100M", Queue: "1bdp", Streams: 4, Flows: 1,
		DurationS: 40, WarmupS: 10, Path: "delay 25ms, rate 100 Mbit/s, queue 625000 B", Goal: 1.3, Runs: 3}
	rec.Results = []Result{
		result(0, "sctp:bbr", "cubic", 1, 50, 45),
		result(0, "sctp:bbr", "cubic", 2, 60, 40),
		result(0, "sctp:bbr", "cubic", 3, 52, 44),
		result(0, "sctp:reno", "cubic", 1, 80, 20),
		{LossPct: 0, Side: "sctp:reno", Against: "cubic", Run: 2, Error: "connect side: killed"},
		result(1, "sctp:bbr", "cubic", 1, 85, 4),
	}
	dir := t.TempDir()
	if err := Write(dir, rec); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"results.json", "results.csv", "RESULTS.md", "ratio-loss-0.svg", "ratio-loss-1.svg",
		"timeline-sctp-bbr-vs-cubic.svg", "timeline-sctp-reno-vs-cubic.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "RESULTS.md"))
	for _, want := range []string{
		"braid bench fair --runs 3",
		"| sctp:bbr | cubic | 52.0 | 44.0 | 1.18 | 1.11–1.50 | 0.993 | yes | 10–20 |",
		"| sctp:reno | cubic | 80.0 | 20.0 | 4.00 | 4.00–4.00 | 0.735 | **no** | 10–20 | (1 failed)",
		"## 1% random loss",
		"| sctp:bbr | cubic | 85.0 | 4.0 | 21.25 |",
		"Met (median): sctp:bbr against cubic (1.18×).",
		"Missed (median): sctp:reno against cubic (4.00×).",
		"![timeline-sctp-bbr-vs-cubic](timeline-sctp-bbr-vs-cubic.svg)",
		"queue 625000 B",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Provenance == nil || got.Provenance.Kernel == "" {
		t.Errorf("results.json has no provenance: %+v", got.Provenance)
	}
	got.Provenance = nil
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(rec)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("results.json round trip:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "results.csv"))
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); len(lines) != 7 ||
		!strings.HasPrefix(lines[0], "loss_pct,side,against") || !strings.HasSuffix(lines[5], "connect side: killed") {
		t.Errorf("results.csv:\n%s", csv)
	}
	if tab := Table(Summarize(rec.Results)); !strings.Contains(tab, "sctp:reno") || !strings.Contains(tab, "1.11–1.50") {
		t.Errorf("Table:\n%s", tab)
	}
}

package netgrid

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSetting(t *testing.T) {
	for in, want := range map[string]Setting{
		"sctp": {Transport: "sctp"}, "sctp:1": {"sctp", 1}, "ptcp:16": {"ptcp", 16}, "tcpn": {Transport: "tcpn"},
	} {
		got, err := ParseSetting(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseSetting(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "udp", "tcp:2", "sctp:0", "ptcp:17", "sctp:17", "sctp:x", "quic:1"} {
		if _, err := ParseSetting(in); err == nil {
			t.Errorf("ParseSetting(%q) accepted", in)
		}
	}
}

func TestConditionSpec(t *testing.T) {
	c := Condition{RTT: 50 * time.Millisecond, Loss: 0.1}
	if got, want := c.Spec("100M"), "rtt=50ms,loss=0.1%,rate=100M,cc=reno"; got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
}

// results: two conditions, one size; at the lossy one the default is
// beaten by ptcp:8.
func results() []Result {
	r := func(rtt, loss float64, s string, run int, rate float64, cut bool) Result {
		return Result{RTTMS: rtt, LossPct: loss, Size: 1 << 20, Setting: s, Run: run, Units: 16, Done: 16,
			UnitsPerSec: rate, P99MS: 100 * rate, Cut: cut}
	}
	return []Result{
		r(20, 0, "sctp", 0, 10, false), r(20, 0, "sctp", 1, 9, false), r(20, 0, "sctp", 2, 30, false),
		r(20, 0, "tcp", 0, 9.5, false), r(20, 0, "ptcp:8", 0, 10, false),
		r(50, 1, "sctp", 0, 2, false), r(50, 1, "tcp", 0, 0.5, true), r(50, 1, "ptcp:8", 0, 4, false),
	}
}

func TestSummarize(t *testing.T) {
	ps := Summarize(results(), Default)
	if len(ps) != 2 {
		t.Fatalf("%d points, want 2", len(ps))
	}
	clean, lossy := ps[0], ps[1]
	if clean.Jobs["sctp"] != 3 || clean.Jobs["tcp"] != 1 {
		t.Errorf("jobs at the clean point: %v, want sctp 3 and tcp 1", clean.Jobs)
	}
	if clean.Rates["sctp"] != 10 || clean.P99MS["sctp"] != 1000 {
		t.Errorf("the median of sctp's three runs: %v units/s, p99 %v", clean.Rates["sctp"], clean.P99MS["sctp"])
	}
	// A tie goes to the first setting in name order: ptcp:8 before sctp.
	if clean.Best != "ptcp:8" || clean.Ratio != 1 {
		t.Errorf("clean: best %s, ratio %v", clean.Best, clean.Ratio)
	}
	if lossy.Best != "ptcp:8" || lossy.Ratio != 0.5 || !lossy.Cut["tcp"] || lossy.Cut["sctp"] {
		t.Errorf("lossy: best %s, ratio %v, cut %v", lossy.Best, lossy.Ratio, lossy.Cut)
	}
	if ps := Summarize([]Result{{Setting: "sctp", Size: 1}, {Setting: "tcp", Size: 1}}, Default); ps[0].Ratio != 1 || math.IsNaN(ps[0].Ratio) {
		t.Errorf("nothing finished: ratio %v, want 1 (the default is not behind)", ps[0].Ratio)
	}
	if ps := Summarize([]Result{{Setting: "tcp", Size: 1, UnitsPerSec: 3}}, Default); ps[0].Ratio != 0 {
		t.Errorf("the default not run: ratio %v, want 0", ps[0].Ratio)
	}
	// An even count of runs: the mean of the middle two.
	even := []Result{{Setting: "sctp", Size: 1, UnitsPerSec: 1}, {Setting: "sctp", Size: 1, UnitsPerSec: 4},
		{Setting: "sctp", Size: 1, UnitsPerSec: 2}, {Setting: "sctp", Size: 1, UnitsPerSec: 9}}
	if got := Summarize(even, Default)[0].Rates["sctp"]; got != 3 {
		t.Errorf("median of 1, 2, 4, 9 = %v, want 3", got)
	}
}

func TestRatioText(t *testing.T) {
	for r, want := range map[float64]string{0.8995: "0.89", 0.9: "0.90", 1: "1.00", 0.854: "0.85"} {
		if got := ratioText(r); got != want {
			t.Errorf("ratioText(%v) = %q, want %q", r, got, want)
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	run := Record{Command: "braid bench net --rtt 20ms,50ms", Started: time.Now(), Settings: []string{"sctp", "tcp", "ptcp:8"},
		Default: "sctp", Floor: 0.9, Results: results()}
	if err := Write(dir, run); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"braid bench net --rtt 20ms,50ms",
		"(1 to 3 jobs each here)",
		"| condition | sctp | tcp | ptcp:8 | default ÷ best |",
		"| 50ms, 1% loss | 2.00 | 0.50* | **4.00** | 0.50 |",
		"At 1 of 2 points the default reached at least 0.90×",
		"- 50ms, 1% loss, 1 MiB units: 0.50× ptcp:8",
		"![size-1MiB-loss-1](size-1MiB-loss-1.svg)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	for _, f := range []string{"results.csv", "size-1MiB-loss-0.svg", "size-1MiB-loss-1.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if pngs, _ := filepath.Glob(filepath.Join(dir, "*.png")); len(pngs) > 0 {
		t.Errorf("plots in a second format: %v", pngs)
	}
	back, err := Load(dir)
	if err != nil || len(back.Results) != len(run.Results) || back.Default != "sctp" {
		t.Errorf("Load: %d results, default %q, %v", len(back.Results), back.Default, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "results.json") {
		t.Errorf("Load of a broken file: %v", err)
	}
}

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
		"sctp@auto": {Transport: "sctp", CC: "auto"}, "sctp:1": {Transport: "sctp", Count: 1}, "ptcp:16": {Transport: "ptcp", Count: 16},
		"tcpn": {Transport: "tcpn"}, "tcp@bbr": {Transport: "tcp", CC: "bbr"}, "ptcp:8@cubic": {"ptcp", 8, "cubic"},
		"sctp@reno": {Transport: "sctp", CC: "reno"}, "sctp:4@reno": {"sctp", 4, "reno"}, "sctp@bbr": {Transport: "sctp", CC: "bbr"},
		"quic": {Transport: "quic"}, "tcpn@htcp": {Transport: "tcpn", CC: "htcp"},
	} {
		got, err := ParseSetting(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseSetting(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	// Plain sctp is braid's default: auto.
	if got, err := ParseSetting("sctp"); err != nil || got != Default || got.String() != "sctp@auto" {
		t.Errorf("ParseSetting(sctp) = %+v (%s), %v; want the default", got, got, err)
	}
	for in, want := range map[string]string{
		"": "want sctp", "udp": "want sctp", "tcp:2": "count", "sctp:0": "count", "ptcp:17": "count", "sctp:17": "count",
		"sctp:x": "count", "quic:1": "count", "quic@bbr": "quic has its own", "sctp@vegas": "sctp's congestion control",
		"sctp:2@bbr": "reno's", "tcp@": "congestion control", "tcp@Reno!": "congestion control", "sctp@": "sctp's",
	} {
		if _, err := ParseSetting(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSetting(%q) = %v, want an error naming %q", in, err, want)
		}
	}
}

func TestSettingCC(t *testing.T) {
	for _, tc := range []struct {
		in, resolved, bed string
	}{
		{"tcp", "tcp@bbr", "bbr"}, // the machine's own
		{"tcp@cubic", "tcp@cubic", "cubic"},
		{"ptcp:4@reno", "ptcp:4@reno", "reno"},
		{"sctp@cubic", "sctp@cubic", "bbr"}, // sctp's own: the bed is the machine's
		{"sctp:1", "sctp:1", "bbr"},
		{"quic", "quic", "bbr"},
	} {
		s, err := ParseSetting(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.resolved("bbr").String(); got != tc.resolved {
			t.Errorf("%s resolved on a bbr machine: %s, want %s", tc.in, got, tc.resolved)
		}
		if got := s.bedCC("bbr"); got != tc.bed {
			t.Errorf("%s's bed on a bbr machine: %s, want %s", tc.in, got, tc.bed)
		}
	}
}

func TestBedGroups(t *testing.T) {
	var settings []Setting
	for _, v := range strings.Split(Canonical, ",") {
		s, err := ParseSetting(v)
		if err != nil {
			t.Fatal(err)
		}
		settings = append(settings, s.resolved("bbr"))
	}
	gs := bedGroups(settings, "bbr")
	var got []string
	for _, g := range gs {
		var names []string
		for _, s := range g.settings {
			names = append(names, s.String())
		}
		got = append(got, g.cc+": "+strings.Join(names, " "))
	}
	want := []string{
		"reno: tcp@reno tcpn@reno ptcp@reno",
		"cubic: tcp@cubic tcpn@cubic ptcp@cubic",
		"bbr: tcp@bbr tcpn@bbr ptcp@bbr",
		"bbr: sctp@reno sctp@cubic sctp@bbr sctp@auto sctp:1", // a bed of their own, held no longer than the others
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("beds of the canonical grid on a bbr machine:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// On a cubic machine sctp's settings run in a cubic bed.
	if gs := bedGroups(settings, "cubic"); len(gs) != 4 || gs[3].cc != "cubic" || len(gs[3].settings) != 5 {
		t.Errorf("on a cubic machine: %+v; want sctp's five settings in a fourth bed, cubic", gs)
	}
}

func TestConditionSpec(t *testing.T) {
	c := Condition{RTT: 50 * time.Millisecond, Loss: 0.1}
	if got, want := c.Spec("100M", "cubic"), "rtt=50ms,loss=0.1%,rate=100M,cc=cubic"; got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
	if got, want := c.Spec("100M", ""), "rtt=50ms,loss=0.1%,rate=100M"; got != want {
		t.Errorf("Spec = %q, want %q", got, want)
	}
}

// results: two conditions, one size; at the clean one the default ties
// with the best, ptcp:8 (equal medians), and tcp@bbr runs 0.95× it; at
// the lossy one the default is beaten by ptcp:8, and tcp@bbr ties with it.
func results() []Result {
	r := func(rtt, loss float64, s string, run int, rate float64, cut bool) Result {
		return Result{RTTMS: rtt, LossPct: loss, Size: 1 << 20, Setting: s, Run: run, Units: 16, Done: 16,
			UnitsPerSec: rate, P99MS: 100 * rate, Cut: cut}
	}
	return []Result{
		r(20, 0, "sctp@auto", 0, 10, false), r(20, 0, "sctp@auto", 1, 9, false), r(20, 0, "sctp@auto", 2, 30, false),
		r(20, 0, "tcp@bbr", 0, 9.5, false), r(20, 0, "ptcp:8", 0, 10, false),
		r(50, 1, "sctp@auto", 0, 2, false), r(50, 1, "tcp@bbr", 0, 3.5, true), r(50, 1, "ptcp:8", 0, 3, false),
		r(50, 1, "ptcp:8", 1, 5, false), r(50, 1, "ptcp:8", 2, 4, false),
	}
}

func TestSummarize(t *testing.T) {
	ps := Summarize(results(), Default.String())
	if len(ps) != 2 {
		t.Fatalf("%d points, want 2", len(ps))
	}
	clean, lossy := ps[0], ps[1]
	if clean.Jobs["sctp@auto"] != 3 || clean.Jobs["tcp@bbr"] != 1 {
		t.Errorf("jobs at the clean point: %v, want sctp@auto 3 and tcp@bbr 1", clean.Jobs)
	}
	if clean.Rates["sctp@auto"] != 10 || clean.P99MS["sctp@auto"] != 1000 {
		t.Errorf("the median of sctp@auto's three runs: %v units/s, p99 %v", clean.Rates["sctp@auto"], clean.P99MS["sctp@auto"])
	}
	if sp := clean.Spreads["sctp@auto"]; sp != (Spread{Median: 10, Min: 9, Max: 30}) {
		t.Errorf("sctp@auto's spread at the clean point: %+v, want 10 (9–30)", sp)
	}
	// Equal medians: the first setting in name order is the best, the
	// other a tie.
	if clean.Best != "ptcp:8" || clean.Ratio != 1 || !clean.Ties["sctp@auto"] || clean.Ties["ptcp:8"] {
		t.Errorf("clean: best %s, ratio %v, ties %v", clean.Best, clean.Ratio, clean.Ties)
	}
	// One job of the best: its spread is one rate, and 9.5 < 10 is no tie
	// but meets the floor.
	if clean.Ties["tcp@bbr"] || !clean.Meets("tcp@bbr", 0.9) || clean.Meets("tcp@bbr", 0.99) {
		t.Errorf("clean: tcp@bbr tie %v, meets 0.9 %v, meets 0.99 %v; want false, true, false",
			clean.Ties["tcp@bbr"], clean.Meets("tcp@bbr", 0.9), clean.Meets("tcp@bbr", 0.99))
	}
	if lossy.Best != "ptcp:8" || lossy.Ratio != 0.5 || !lossy.Cut["tcp@bbr"] || lossy.Cut["sctp@auto"] {
		t.Errorf("lossy: best %s, ratio %v, cut %v", lossy.Best, lossy.Ratio, lossy.Cut)
	}
	// ptcp:8 ran 3, 4 and 5: tcp@bbr's 3.5 is within its spread, a tie
	// although below 0.9×; the default's 2 is neither.
	if !lossy.Ties["tcp@bbr"] || !lossy.Meets("tcp@bbr", 0.9) || lossy.Ties["sctp@auto"] || lossy.Meets("sctp@auto", 0.9) {
		t.Errorf("lossy: ties %v; tcp@bbr meets %v, the default meets %v", lossy.Ties,
			lossy.Meets("tcp@bbr", 0.9), lossy.Meets("sctp@auto", 0.9))
	}
	if lossy.Meets("quic", 0) {
		t.Error("a setting not run meets the floor")
	}
	if ps := Summarize([]Result{{Setting: "sctp@auto", Size: 1}, {Setting: "tcp", Size: 1}}, "sctp@auto"); ps[0].Ratio != 1 || math.IsNaN(ps[0].Ratio) {
		t.Errorf("nothing finished: ratio %v, want 1 (the default is not behind)", ps[0].Ratio)
	}
	if ps := Summarize([]Result{{Setting: "tcp", Size: 1, UnitsPerSec: 3}}, "sctp@auto"); ps[0].Ratio != 0 {
		t.Errorf("the default not run: ratio %v, want 0", ps[0].Ratio)
	}
	// An even count of runs: the mean of the middle two.
	even := []Result{{Setting: "sctp", Size: 1, UnitsPerSec: 1}, {Setting: "sctp", Size: 1, UnitsPerSec: 4},
		{Setting: "sctp", Size: 1, UnitsPerSec: 2}, {Setting: "sctp", Size: 1, UnitsPerSec: 9}}
	if got := Summarize(even, "sctp")[0].Spreads["sctp"]; got != (Spread{Median: 3, Min: 1, Max: 9}) {
		t.Errorf("median of 1, 2, 4, 9 = %+v, want 3 (1–9)", got)
	}
}

func TestVerdict(t *testing.T) {
	p := Point{Best: "tcp@bbr", Rates: map[string]float64{"tcp@bbr": 10, "sctp@auto": 8}, Ratio: 0.8,
		Spreads: map[string]Spread{"tcp@bbr": {10, 7, 12}}, Ties: map[string]bool{"sctp@auto": true}}
	if got := verdict(p, "sctp@auto", 0.9); !strings.Contains(got, "tie") || !p.Meets("sctp@auto", 0.9) {
		t.Errorf("0.8× within the best's spread: %q, meets %v; want a tie that meets the floor", got, p.Meets("sctp@auto", 0.9))
	}
	p.Ties = nil
	if got := verdict(p, "sctp@auto", 0.9); got != "**below**" || p.Meets("sctp@auto", 0.9) {
		t.Errorf("0.8×, no tie: %q, meets %v; want below", got, p.Meets("sctp@auto", 0.9))
	}
	p.Ratio, p.Rates["sctp@auto"] = 0.9, 9
	if got := verdict(p, "sctp@auto", 0.9); !strings.Contains(got, "≥ 0.90×") || !p.Meets("sctp@auto", 0.9) {
		t.Errorf("0.9×: %q, meets %v", got, p.Meets("sctp@auto", 0.9))
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
	run := Record{Command: "braid bench net --rtt 20ms,50ms", Started: time.Now(), Settings: []string{"sctp@auto", "tcp@bbr", "ptcp:8"},
		Default: "sctp@auto", Floor: 0.9, HostCC: "bbr", Results: results()}
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
		"The machine's TCP congestion control, which sctp's beds ran under, is bbr.",
		"| setting | 20ms, 0% loss | 50ms, 1% loss |",
		"| `sctp@auto` | 10.00 ≈ (9.00–30.00) | 2.00 (2.00–2.00) |",
		"| `tcp@bbr` | 9.50 (9.50–9.50) | 3.50* ≈ (3.50–3.50) |",
		"| `ptcp:8` | **10.00** (10.00–10.00) | **4.00** (3.00–5.00) |",
		"| 20ms, 0% loss | 1 MiB | `ptcp:8` 10.00 (10.00–10.00) | 10.00 (9.00–30.00) | 1.00 | meets (≥ 0.90×) |",
		"| 50ms, 1% loss | 1 MiB | `ptcp:8` 4.00 (3.00–5.00) | 2.00 (2.00–2.00) | 0.50 | **below** |",
		"At 1 of 2 points the default reached at least 0.90× the best setting's median or tied with it.",
		"| `sctp@auto` | 1 of 2 | 0.50× |",
		"| `tcp@bbr` | 0 of 2 | 0.87× |",
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
	if err != nil || len(back.Results) != len(run.Results) || back.Default != "sctp@auto" || back.HostCC != "bbr" {
		t.Errorf("Load: %d results, default %q, %v", len(back.Results), back.Default, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "results.json") {
		t.Errorf("Load of a broken file: %v", err)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/braidhq/braid/bench/overhead"
	"github.com/braidhq/braid/ops/samples"
)

// braid bench overhead runs a built-in operation with parameters on a
// given input, and reports its CPU time per unit beside the rate.
func TestBenchOverheadOp(t *testing.T) {
	dir := t.TempDir()
	gif := filepath.Join(dir, "small.gif")
	if err := os.WriteFile(gif, samples.GIF(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "bench", "overhead", "--op", "blur", "--input", gif, "--param", "sigma=1",
		"--units", "6", "--runs", "1", "--transport", "tcp", "--json")
	var rs []overhead.Result
	if err := json.Unmarshal([]byte(stdout), &rs); code != 0 || err != nil {
		t.Fatalf("exit %d, %v; stdout %q, stderr %q", code, err, stdout, stderr)
	}
	if len(rs) != 1 || rs[0].Op != "blur" || rs[0].Units != 6 || rs[0].Size != len(samples.GIF()) || !(rs[0].CPUPerUnitMS > 0) {
		t.Errorf("results %+v, want one run of 6 blur units of the GIF's size with their CPU time", rs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--op", "blur", "--wasm", gif}, "give one"},
		{[]string{"--input", gif, "--inputs"}, "give one"},
		{[]string{"--param", "sigma"}, "want key=value"},
	} {
		code, _, stderr := runCmd(t, append([]string{"bench", "overhead"}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("braid bench overhead %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, stderr, c.want)
		}
	}
}

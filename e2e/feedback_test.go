package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/braidhq/braid/internal/cpucg"
)

// TestReceiverFeedback runs the short form of `braid bench feedback`: a
// worker process held to a twentieth of a CPU (cgroup v1; root, else the test
// skips) runs a job of 4 MiB units, bounded once by unit windows alone
// and once by byte budgets, over a horizon of 200 ms so that the budget
// stays near its floor (3 units) on a faster machine too. Both jobs must
// finish, and the byte budgets must keep well under half the bytes in
// flight that the windows let out (24 units' worth, all there are). The
// times are the bench's business.
func TestReceiverFeedback(t *testing.T) {
	if err := cpucg.Available(); err != nil {
		t.Skipf("needs a CPU quota: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, braidBin, "bench", "feedback", "--op", "noop", "--units", "24", "--pixels", "1182",
		"--cpus", "0.05", "--window", "16", "--byte-horizon", "200ms", "--json")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench feedback: %v\n%s", err, stderr.String())
	}
	var rs []struct {
		Mode         string  `json:"mode"`
		UnitsPerSec  float64 `json:"units_per_sec"`
		InFlightPeak int64   `json:"in_flight_peak"`
	}
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("results %q: %v", out.String(), err)
	}
	if len(rs) != 2 || rs[0].Mode != "windows" || rs[1].Mode != "bytes" {
		t.Fatalf("results %+v, want a windows run and a bytes run", rs)
	}
	t.Logf("in flight at most: %d MiB with windows alone, %d MiB with byte budgets; units/s %.2f and %.2f",
		rs[0].InFlightPeak>>20, rs[1].InFlightPeak>>20, rs[0].UnitsPerSec, rs[1].UnitsPerSec)
	const unit = 3 * 1182 * 1182 // the bench's PNG of noise, about 4 MiB
	if rs[0].InFlightPeak < 20*unit {
		t.Errorf("with windows alone at most %d bytes were in flight; 16×2 windows let all 24 units (%d bytes) out", rs[0].InFlightPeak, 24*unit)
	}
	if 2*rs[1].InFlightPeak > rs[0].InFlightPeak {
		t.Errorf("byte budgets let %d bytes be in flight, not under half of windows' %d", rs[1].InFlightPeak, rs[0].InFlightPeak)
	}
}

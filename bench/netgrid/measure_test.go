package netgrid

import (
	"testing"
	"time"
)

func TestJobMore(t *testing.T) {
	j := Job{Runs: 3}
	for r, want := range []bool{true, true, true, false} {
		if got := j.more(r, time.Hour); got != want {
			t.Errorf("--runs 3, after %d jobs: more = %v, want %v", r, got, want)
		}
	}
	j.MinTime, j.MaxRuns = 10*time.Second, 5
	for _, tc := range []struct {
		r     int
		spent time.Duration
		want  bool
	}{
		{0, time.Hour, true},          // --runs first, whatever the time
		{2, time.Hour, true},          // --runs first, whatever the time
		{3, 9 * time.Second, true},    // short of --min-time
		{3, 10 * time.Second, false},  // --min-time reached
		{4, 9 * time.Second, true},    // short of --min-time
		{5, 1 * time.Second, false},   // --max-runs reached
		{3, 10*time.Second - 1, true}, // a nanosecond short
	} {
		if got := j.more(tc.r, tc.spent); got != tc.want {
			t.Errorf("--runs 3 --min-time 10s --max-runs 5, after %d jobs of %v: more = %v, want %v", tc.r, tc.spent, got, tc.want)
		}
	}
}

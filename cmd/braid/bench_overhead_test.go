package main

import "testing"

// TestUnitRate: a job over a slow link shows its rate, not 0.
func TestUnitRate(t *testing.T) {
	for v, want := range map[float64]string{0.4987: "0.50", 12.345: "12.35", 99.994: "99.99", 100: "100", 35030.4: "35030"} {
		if got := unitRate(v); got != want {
			t.Errorf("unitRate(%v) = %q, want %q", v, got, want)
		}
	}
}

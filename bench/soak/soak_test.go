package soak

import (
	"context"
	"testing"
	"time"
)

// TestShortSoakPlateaus runs a short soak (100 jobs, 4 s on an idle
// machine) with a small retention and checks that, once retention has
// kicked in, memory, the state database and the jobs the server holds stop
// growing: the later samples stay within a generous margin of the
// plateau's. The run ends with its jobs, not with a time: a loaded machine
// put only 16 jobs through in the 8 s it had before.
func TestShortSoakPlateaus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := Config{Duration: 4 * time.Minute, Jobs: 100, Every: 300 * time.Millisecond, Rate: 25, Units: 10, BigUnits: 20_000,
		RetainJobs: 10, GCGrace: 300 * time.Millisecond, MaxOutstanding: 16}
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Samples
	for _, x := range s {
		t.Log(x)
	}
	if len(s) < 10 {
		t.Fatalf("only %d samples", len(s))
	}
	plateau, later := s[len(s)*2/5:len(s)*7/10], s[len(s)*7/10:]
	peak := func(xs []Sample, f func(Sample) int64) int64 {
		m := int64(0)
		for _, x := range xs {
			m = max(m, f(x))
		}
		return m
	}
	checks := []struct {
		what  string
		f     func(Sample) int64
		slack int64
	}{
		{"RSS", func(x Sample) int64 { return x.RSSBytes }, 48 << 20},
		{"Go heap", func(x Sample) int64 { return int64(x.HeapBytes) }, 32 << 20},
		{"state.db", func(x Sample) int64 { return x.StateDBBytes }, 1 << 20},
	}
	for _, c := range checks {
		p, l := peak(plateau, c.f), peak(later, c.f)
		if l > p+p/2+c.slack {
			t.Errorf("%s grows after retention kicked in: plateau peak %d, later peak %d", c.what, p, l)
		}
	}
	last := s[len(s)-1]
	if limit := cfg.RetainJobs + cfg.MaxOutstanding; last.Jobs > limit {
		t.Errorf("the server holds %d jobs at the end; retention keeps %d finished and at most %d run", last.Jobs, cfg.RetainJobs, cfg.MaxOutstanding)
	}
	if removed := last.Submitted - last.Jobs; last.Submitted != cfg.Jobs || removed < cfg.Jobs-cfg.RetainJobs-cfg.MaxOutstanding || last.Failed > 0 {
		t.Errorf("submitted %d jobs, %d failed, %d removed: the soak did not run as meant", last.Submitted, last.Failed, removed)
	}
}

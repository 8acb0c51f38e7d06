package worker

import "testing"

func TestRehold(t *testing.T) {
	for _, c := range []struct {
		old, now int64
		want     bool
	}{
		{1000, 1000, false},
		{1000, 1200, false}, // a fifth more: not worth telling
		{1000, 1300, true},
		{1000, 700, true},
		{1000, 800, false},
	} {
		if got := rehold(c.old, c.now); got != c.want {
			t.Errorf("rehold(%d, %d) = %v, want %v", c.old, c.now, got, c.want)
		}
	}
}

// TestHoldBytes: a configured figure is kept, a negative one says nothing,
// and the default is a quarter of what the process could have, at least
// minHold.
func TestHoldBytes(t *testing.T) {
	if got := holdBytes(12345); got != 12345 {
		t.Errorf("holdBytes(12345) = %d", got)
	}
	if got := holdBytes(-1); got != 0 {
		t.Errorf("holdBytes(-1) = %d, want 0", got)
	}
	got, rss := holdBytes(0), selfRSS()
	if got < minHold || rss <= 0 || got < rss/4 {
		t.Errorf("holdBytes(0) = %d with RSS %d; want at least %d and a quarter of the RSS", got, rss, minHold)
	}
}

package preauth

import (
	"sync"
	"time"
)

// Tally counts evictions so that a listener under attack logs a summary
// at most once per Every instead of a line per dropped peer. The zero
// value logs at most once a second.
type Tally struct {
	Every time.Duration

	mu   sync.Mutex // guards n and last
	n    int
	last time.Time
}

// Note counts one eviction. It returns how many to report now (this one
// and those held back), or 0 while the last report is recent.
func (t *Tally) Note(now time.Time) int {
	every := t.Every
	if every <= 0 {
		every = time.Second
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	if now.Sub(t.last) < every {
		return 0
	}
	n := t.n
	t.n, t.last = 0, now
	return n
}

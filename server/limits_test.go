package server

import (
	"testing"

	"github.com/braidhq/braid/scheduler"
)

// TestStreamQueueHoldsTheWindow: for every window Config allows, a
// stream's send queue holds every unit the core may have in flight on the
// stream (the window grows by feedback up to max(Window, MaxWindow)) with
// a margin, and no allowed window needs more than 64 slots.
func TestStreamQueueHoldsTheWindow(t *testing.T) {
	for w := 0; w <= MaxWindow; w++ {
		if err := validateWindow(w); err != nil {
			t.Fatalf("window %d refused: %v", w, err)
		}
		s := &Server{cfg: Config{Window: w}}
		n := s.streamQueueLen()
		if need := max(w, scheduler.DefaultMaxWindow) + queueSlack; n < need || n > 64 {
			t.Errorf("window %d: queue of %d, want %d to 64", w, n, need)
		}
	}
}

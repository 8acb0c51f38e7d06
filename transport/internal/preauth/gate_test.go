package preauth

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

var (
	srcA = netip.MustParseAddr("10.0.0.1")
	srcB = netip.MustParseAddr("10.0.0.2")
)

// TestEvictsOldestPerSource checks that a source over its bound loses its
// oldest connection, and other sources keep theirs.
func TestEvictsOldestPerSource(t *testing.T) {
	g := &Gate{MaxTotal: 10, MaxPerSource: 2, Quiet: time.Hour}
	var evicted [4]atomic.Bool
	b := g.Enter(srcB, func() { t.Error("source B evicted") })
	defer b.Leave()
	for i := range 3 {
		s := g.Enter(srcA, func() { evicted[i].Store(true) })
		defer s.Leave()
	}
	if !evicted[0].Load() || evicted[1].Load() || evicted[2].Load() {
		t.Errorf("evicted %v, want only the first", evicted[:3])
	}
	if g.Len() != 3 {
		t.Errorf("Len %d, want 3", g.Len())
	}
}

// TestEvictsOldestInTotal checks the total bound.
func TestEvictsOldestInTotal(t *testing.T) {
	g := &Gate{MaxTotal: 2, MaxPerSource: 2, Quiet: time.Hour}
	var first atomic.Bool
	g.Enter(srcA, func() { first.Store(true) })
	s2 := g.Enter(srcB, func() { t.Error("second evicted") })
	s3 := g.Enter(srcB, func() { t.Error("third evicted") })
	if !first.Load() || g.Len() != 2 {
		t.Fatalf("first evicted %v, Len %d", first.Load(), g.Len())
	}
	s2.Leave()
	s3.Leave()
	s3.Leave()
	if g.Len() != 0 {
		t.Errorf("Len %d after Leave, want 0", g.Len())
	}
}

// TestQuiet checks that a silent slot is evicted after Quiet and one that
// spoke is not.
func TestQuiet(t *testing.T) {
	g := &Gate{Quiet: 20 * time.Millisecond}
	silent, spoke := make(chan struct{}), make(chan struct{})
	g.Enter(srcA, func() { close(silent) })
	s := g.Enter(srcA, func() { close(spoke) })
	s.Spoke()
	select {
	case <-silent:
	case <-time.After(5 * time.Second):
		t.Fatal("silent slot not evicted")
	}
	select {
	case <-spoke:
		t.Fatal("a slot that spoke was evicted by the quiet timer")
	case <-time.After(100 * time.Millisecond):
	}
	if g.Len() != 1 {
		t.Errorf("Len %d, want 1", g.Len())
	}
}

func TestTally(t *testing.T) {
	var tl Tally
	t0 := time.Unix(1000, 0)
	got := []int{tl.Note(t0), tl.Note(t0.Add(time.Millisecond)), tl.Note(t0.Add(2 * time.Millisecond)), tl.Note(t0.Add(1100 * time.Millisecond))}
	if want := []int{1, 0, 0, 3}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("Note gave %v, want %v", got, want)
	}
}

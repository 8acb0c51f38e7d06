package server

import (
	"math/rand/v2"
	"testing"
)

// TestUnitSet: a set agrees with a map of the same adds, and a block whose
// every index is in holds no bitmap any more.
func TestUnitSet(t *testing.T) {
	const n = 3*setBlock + 100
	s := newUnitSet(n)
	want := map[int]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		i := rng.IntN(n)
		if added := s.add(i); added == want[i] {
			t.Fatalf("add(%d) = %v with %d in the set: %v", i, added, i, want[i])
		}
		want[i] = true
	}
	for i := range setBlock { // fill block 0 whole
		if s.add(i) {
			want[i] = true
		}
	}
	for i := range n {
		if s.has(i) != want[i] {
			t.Fatalf("has(%d) = %v, want %v", i, s.has(i), want[i])
		}
	}
	if s.len() != len(want) || s.blocks[0] != fullBlock {
		t.Errorf("len %d, want %d; block 0 full: %v", s.len(), len(want), s.blocks[0] == fullBlock)
	}
	if s.add(5) || !s.has(setBlock-1) {
		t.Error("a full block takes an index again, or lost one")
	}
}

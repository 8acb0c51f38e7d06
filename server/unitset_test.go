package server

import (
	"fmt"
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

// TestUnitSetSpans: the runs a set gives cover exactly its indexes, in
// order, none touching the next.
func TestUnitSetSpans(t *testing.T) {
	const n = 3*setBlock + 100
	s := newUnitSet(n)
	for i := range setBlock + 70 { // a full block, then a run into the next
		s.add(i)
	}
	for _, i := range []int{setBlock + 200, setBlock + 201, 2*setBlock + 63, 2*setBlock + 64, n - 1} {
		s.add(i)
	}
	var got [][2]int
	s.spans(func(from, to int) { got = append(got, [2]int{from, to}) })
	want := [][2]int{{0, setBlock + 70}, {setBlock + 200, setBlock + 202}, {2*setBlock + 63, 2*setBlock + 65}, {n - 1, n}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("spans %v, want %v", got, want)
	}
}

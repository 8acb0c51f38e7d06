package server

// unitSet is a set of a job's unit indexes, such as those whose result was
// accepted, that costs next to nothing per unit when the set is dense or
// empty in long runs, as a job's accepted units are: indexes are grouped
// in blocks of setBlock, and a block is nil while empty, full while all its
// indexes are in, and a bitmap only in between. A 10,000,000-unit job
// holds a few bitmaps (the blocks its units in flight are in), not ten
// million records.
type unitSet struct {
	blocks []*[setWords]uint64
	counts []uint32 // indexes in each block
	n      int      // indexes in the set
}

const (
	setBlock = 1 << 16
	setWords = setBlock / 64
)

// fullBlock stands for every block whose indexes are all in.
var fullBlock = func() *[setWords]uint64 {
	var b [setWords]uint64
	for i := range b {
		b[i] = ^uint64(0)
	}
	return &b
}()

func newUnitSet(size int) *unitSet {
	nb := (size + setBlock - 1) / setBlock
	return &unitSet{blocks: make([]*[setWords]uint64, nb), counts: make([]uint32, nb)}
}

// has reports whether i is in the set.
func (s *unitSet) has(i int) bool {
	b := s.blocks[i/setBlock]
	return b != nil && b[i%setBlock/64]&(1<<(i%64)) != 0
}

// add puts i in the set and reports whether it was not in it.
func (s *unitSet) add(i int) bool {
	k := i / setBlock
	b := s.blocks[k]
	switch {
	case b == fullBlock:
		return false
	case b == nil:
		b = new([setWords]uint64)
		s.blocks[k] = b
	}
	w, bit := i%setBlock/64, uint64(1)<<(i%64)
	if b[w]&bit != 0 {
		return false
	}
	b[w] |= bit
	s.counts[k]++
	s.n++
	if s.counts[k] == setBlock {
		s.blocks[k] = fullBlock // the bitmap goes to the collector
	}
	return true
}

// len is the number of indexes in the set.
func (s *unitSet) len() int { return s.n }

// spans calls f with the set's indexes as ascending, disjoint runs
// [from, to), each as long as it can be.
func (s *unitSet) spans(f func(from, to int)) {
	start := -1 // the open run's first index, -1 if none
	for k, b := range s.blocks {
		base := k * setBlock
		switch b {
		case fullBlock:
			if start < 0 {
				start = base
			}
			continue
		case nil:
			if start >= 0 {
				f(start, base)
				start = -1
			}
			continue
		}
		for w, word := range b {
			for bit := range 64 {
				i := base + w*64 + bit
				in := word&(1<<bit) != 0
				switch {
				case in && start < 0:
					start = i
				case !in && start >= 0:
					f(start, i)
					start = -1
				}
			}
		}
	}
	if start >= 0 {
		f(start, len(s.blocks)*setBlock)
	}
}

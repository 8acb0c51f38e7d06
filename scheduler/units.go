package scheduler

import "time"

// A job keeps its units in columns, not a record each: a byte of state a
// unit, and the other columns only when its units differ in them (their
// operations, sizes, dependencies, holds). What a unit needs once sent,
// its attempts and the copies in flight, is a run, kept only until the
// unit is final and every copy is back. So a job of identical units costs
// about a byte a unit however large it is.

type unitState uint8

const (
	unitPending unitState = iota // waiting to be sent (maybe for its deps)
	unitRunning                  // at least one copy in flight
	unitDone                     // result accepted
	unitFailed                   // failed result accepted, or a dependency failed

	stateMask unitState = 3
	// heldBit marks a unit held (Unit.Held) until a UnitsReleased names it.
	heldBit unitState = 4
)

// maxUnits is the most units a job may have: indexes are kept in 32 bits.
const maxUnits = 1<<31 - 2

// attempt is one copy of a unit in flight on a worker stream.
type attempt struct {
	worker *worker
	stream int
	n      int  // Attempt number
	spec   bool // speculative duplicate
	sent   time.Time
	ahead  int // units already in flight on the stream when sent
}

// run is a unit that has been sent: its last attempt number and its
// copies in flight.
type run struct {
	attempts   int
	duplicated bool // a speculative copy was issued
	copies     []attempt
}

// csr lists items per unit in one slice: unit i's are
// list[off[i]:off[i+1]]. The zero csr has none for every unit.
type csr struct {
	off  []int32
	list []int32
}

func (c csr) of(i int) []int32 {
	if c.off == nil {
		return nil
	}
	return c.list[c.off[i]:c.off[i+1]]
}

// state is unit i's state, without the held bit.
func (j *job) state(i int) unitState { return j.states[i] & stateMask }

func (j *job) setState(i int, st unitState) { j.states[i] = j.states[i]&^stateMask | st }

// held reports whether unit i waits for a UnitsReleased.
func (j *job) held(i int) bool { return j.states[i]&heldBit != 0 }

// sizeOf is unit i's input size in bytes, 0 if unknown.
func (j *job) sizeOf(i int) int64 {
	if j.sizes == nil {
		return j.sizeAll
	}
	return j.sizes[i]
}

// setSize sets unit i's input size, giving the job a size column if its
// units no longer all have the same.
func (j *job) setSize(i int, size int64) {
	if j.sizes == nil {
		if size == j.sizeAll {
			return
		}
		j.sizes = make([]int64, j.n)
		for k := range j.sizes {
			j.sizes[k] = j.sizeAll
		}
	}
	j.sizes[i] = size
}

// queueOf is the queue of unit i's operation.
func (j *job) queueOf(i int) *opQueue {
	if j.opOf == nil {
		return j.ops[0]
	}
	return j.ops[j.opOf[i]]
}

// blockers is how many of unit i's dependencies are not yet accepted,
// plus one while it is held.
func (j *job) blockers(i int) int32 {
	if j.blocked == nil {
		return 0
	}
	return j.blocked[i]
}

// run returns unit i's run, nil if it has none.
func (j *job) run(i int) *run { return j.runs[int32(i)] }

// runFor returns unit i's run, making one from spare if it has none.
func (j *job) runFor(i int, spare *[]*run) *run {
	if r := j.runs[int32(i)]; r != nil {
		return r
	}
	var r *run
	if n := len(*spare); n > 0 {
		r, *spare = (*spare)[n-1], (*spare)[:n-1]
	} else {
		r = &run{}
	}
	j.runs[int32(i)] = r
	return r
}

// dropRun forgets unit i's run once the unit is final with no copy in
// flight, keeping it in spare for reuse.
func (j *job) dropRun(i int, spare *[]*run) {
	r := j.runs[int32(i)]
	if r == nil || len(r.copies) > 0 || j.state(i) < unitDone {
		return
	}
	delete(j.runs, int32(i))
	*r = run{copies: r.copies[:0]}
	if len(*spare) < maxSpareRuns {
		*spare = append(*spare, r)
	}
}

// maxSpareRuns bounds the runs kept for reuse.
const maxSpareRuns = 1 << 16

// bitset is a set of unit indexes, a bit each.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }

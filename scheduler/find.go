package scheduler

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// finder answers the placement queries of dispatch and speculation. The
// core's (indexed) walks the indexes of index.go, so that each costs
// O(log workers) plus the workers it passes over; naive_test.go has the
// reference, which scans every worker as the core once did, and the
// property tests hold the two to the same outputs.
//
// x is the index of the unit's operation; size its input size in bytes.
type finder interface {
	// capable lists the up workers that can run x's operation, by name.
	capable(c *Core, x *opIndex) []*worker
	// allMeasured reports whether every one of them has a unit time.
	allMeasured(c *Core, x *opIndex) bool
	// bestRoom: of the capable workers with room for the unit that share
	// s allows (all of them if s is nil), the one whose freest stream is
	// least loaded, then the faster per stream (speedOf), then by name.
	bestRoom(c *Core, x *opIndex, s *opShare, size int64) *worker
	// earliest: of the capable workers (those with room for the unit, if
	// room), the one that would finish it first (finish), by name on
	// ties. Every capable worker is measured.
	earliest(c *Core, x *opIndex, room bool, size int64) *worker
	// reserve reserves the capable workers that s allows with window room
	// but no byte budget for the unit.
	reserve(c *Core, x *opIndex, s *opShare, size int64)
	// idle: the capable worker other than not with an idle leased stream
	// and byte budget for the unit, measured before unmeasured, then the
	// least unit time, then by name.
	idle(c *Core, x *opIndex, not *worker, size int64) *worker
	// candidates lists j's running units with one copy in flight and no
	// duplicate yet, oldest send first, then by index.
	candidates(c *Core, j *job) []int
	// anyRoom reports whether some up worker has a free stream.
	anyRoom(c *Core) bool
}

// indexed is the core's finder.
type indexed struct{}

var _ finder = indexed{}

func (indexed) capable(c *Core, x *opIndex) []*worker {
	c.work.visits += uint64(len(x.members))
	ws := make([]*worker, len(x.members))
	for k, m := range x.members {
		ws[k] = m.w()
	}
	slices.SortFunc(ws, func(a, b *worker) int { return strings.Compare(a.name, b.name) })
	return ws
}

func (indexed) allMeasured(_ *Core, x *opIndex) bool { return x.unmeasured == 0 }

// roomRanks are the rankings of workers with room that s allows: the
// holders with some share left while the pool is empty, else everyone.
func (c *Core) roomRanks(x *opIndex, s *opShare) []*ranking {
	if s != nil && s.pool == 0 {
		return s.ranks
	}
	c.rs = append(c.rs[:0], x.use(byRoomMeasured), x.use(byRoomUnmeasured))
	return c.rs
}

func (indexed) bestRoom(c *Core, x *opIndex, s *opShare, size int64) *worker {
	var best *worker
	c.walker.walk(c.roomRanks(x, s), c.byDepthSpeed, func(w *worker) bool {
		if !w.reserved && w.budgetFits(size) {
			best = w
			return true
		}
		return false
	})
	return best
}

func (indexed) earliest(c *Core, x *opIndex, room bool, size int64) *worker {
	if room {
		var best *worker
		c.rs = append(c.rs[:0], x.use(byRoomFinish))
		c.walker.walk(c.rs, byRoomFinish.compare, func(w *worker) bool {
			if !w.reserved && w.budgetFits(size) {
				best = w
				return true
			}
			return false
		})
		return best
	}
	// A worker's finish without room is its key's, or later when the unit
	// does not fit its budget: walk by the key until no worker left could
	// beat the best so far.
	var best *worker
	var bestT time.Duration
	c.rs = append(c.rs[:0], x.use(byFinish))
	c.walker.walk(c.rs, byFinish.compare, func(w *worker) bool {
		if best != nil && cmp.Or(cmp.Compare(w.key.finish, bestT), strings.Compare(w.name, best.name)) > 0 {
			return true
		}
		if t, ok := finish(w, false, size); ok && (best == nil || cmp.Or(cmp.Compare(t, bestT), strings.Compare(w.name, best.name)) < 0) {
			best, bestT = w, t
		}
		return false
	})
	return best
}

func (indexed) reserve(c *Core, x *opIndex, s *opShare, size int64) {
	for _, r := range c.roomRanks(x, s) {
		c.work.visits += uint64(len(r.items))
		for _, e := range r.items {
			if w := e.s.w; !w.reserved && !w.budgetFits(size) {
				c.reserve(w)
			}
		}
	}
}

func (indexed) idle(c *Core, x *opIndex, not *worker, size int64) *worker {
	var best *worker
	c.rs = append(c.rs[:0], x.use(byIdle))
	c.walker.walk(c.rs, byIdle.compare, func(w *worker) bool {
		if w != not && w.fits(size) {
			best = w
			return true
		}
		return false
	})
	return best
}

func (indexed) candidates(c *Core, j *job) []int {
	c.ints = j.candidates(c.ints[:0])
	return c.ints
}

func (indexed) anyRoom(c *Core) bool { return c.roomCount > c.reservedRoom }

// byDepthSpeed orders workers with room as bestRoom picks: the least
// loaded freest stream, then the faster per stream, then by name.
func (c *Core) byDepthSpeed(a, b *worker) int {
	return cmp.Or(cmp.Compare(a.key.depth, b.key.depth), cmp.Compare(c.speedOf(b), c.speedOf(a)), strings.Compare(a.name, b.name))
}

// speedOf is w's service rate per leased stream: measured, or for an
// unmeasured worker its threads per stream times the mean rate per thread
// of the measured workers that are up (1 with none).
func (c *Core) speedOf(w *worker) float64 {
	if w.key.measured || c.rateThreads == 0 {
		return w.key.speed
	}
	return w.key.speed * (c.rateSum / float64(c.rateThreads))
}

// reserve keeps w's room for a unit waiting for its byte budget, for the
// rest of this dispatch pass.
func (c *Core) reserve(w *worker) {
	if w.reserved {
		return
	}
	w.reserved = true
	c.reserved = append(c.reserved, w)
	if w.key.room {
		c.reservedRoom++
	}
}

// unreserve ends the last pass's reservations.
func (c *Core) unreserve() {
	for _, w := range c.reserved {
		w.reserved = false
	}
	clear(c.reserved)
	c.reserved, c.reservedRoom = c.reserved[:0], 0
}

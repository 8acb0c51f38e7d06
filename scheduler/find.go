package scheduler

import (
	"cmp"
	"math"
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
	// reserve reserves, for the rest of the dispatch pass, the capable
	// workers that s allows with window room but no byte budget for the
	// unit (Core.isReserved).
	reserve(c *Core, x *opIndex, s *opShare, size int64)
	// idle: the capable worker other than not with an idle leased stream
	// and byte budget for the unit, measured before unmeasured, then the
	// least unit time, then by name.
	idle(c *Core, x *opIndex, not *worker, size int64) *worker
	// candidates lists j's running units with one copy in flight and no
	// duplicate yet, oldest send first, then by index.
	candidates(c *Core, j *job) []int
	// anyRoom reports whether some up worker has a free stream,
	// reservations aside.
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

// roomRanks are the rankings of workers with room that s allows, for a
// unit of size bytes: the holders with some share left while the pool is
// empty, else everyone (x's, which hold only those with room for a unit
// of x.fitSize); spare is the same workers by spare bytes.
func (c *Core) roomRanks(x *opIndex, s *opShare, size int64) (rs []*ranking, spare *ranking) {
	if s != nil && s.pool == 0 {
		return s.ranks[:bySpareShare], s.ranks[bySpareShare]
	}
	x.fitRoom(size)
	c.rs = append(c.rs[:0], x.use(byRoomMeasured), x.use(byRoomUnmeasured))
	return c.rs, x.use(bySpare)
}

func (indexed) bestRoom(c *Core, x *opIndex, s *opShare, size int64) *worker {
	rs, spare := c.roomRanks(x, s, size)
	return c.firstFit(rs, c.depthSpeed, spare, false, size)
}

func (indexed) earliest(c *Core, x *opIndex, room bool, size int64) *worker {
	if room {
		x.fitRoom(size)
		c.rs = append(c.rs[:0], x.use(byRoomFinish))
		return c.firstFit(c.rs, orders[byRoomFinish], x.use(bySpare), true, size)
	}
	// A worker's finish without room is its key's, or later when the unit
	// does not fit its budget: walk by the key until no worker left could
	// beat the best so far.
	var best *worker
	var bestT time.Duration
	c.rs = append(c.rs[:0], x.use(byFinish))
	c.walker.walk(c.rs, orders[byFinish], func(w *worker) bool {
		if best != nil && cmp.Or(cmp.Compare(w.key.finish, bestT), strings.Compare(w.name, best.name)) > 0 {
			return true
		}
		if t, ok := c.finish(w, false, size); ok && (best == nil || cmp.Or(cmp.Compare(t, bestT), strings.Compare(w.name, best.name)) < 0) {
			best, bestT = w, t
		}
		return false
	})
	return best
}

// firstFit returns the first worker by order of the rankings rs, all of
// workers with room, that a unit of size bytes fits (Core.fits); nil if
// none does. spare ranks the same workers by spare bytes; with measured,
// rs hold only the measured ones, and spare's others are left out.
//
// Walking rs alone passes over every member better by order whose budget
// the unit does not fit: when most workers are busy up to their budgets,
// nearly all of them. So the walk by order goes in step with one of spare
// down to the last member the unit fits: the first to find the answer
// ends both, and the work is twice the lesser of the members passed over
// by order and the members the unit fits.
func (c *Core) firstFit(rs []*ranking, order func(a, b *worker) int, spare *ranking, measured bool, size int64) *worker {
	c.walker.start(rs, order, math.MaxInt64)
	c.spareRs = append(c.spareRs[:0], spare)
	c.spare.start(c.spareRs, orders[bySpare], -max(size, 1))
	var cand *worker // the best by order that fits, of those spare gave
	for {
		w, ok := c.walker.next()
		if !ok {
			return cand
		}
		if c.fits(w, size) {
			return w
		}
		f, ok := c.spare.next()
		if !ok { // every member the unit fits is seen
			return cand
		}
		if (!measured || f.key.measured) && c.fits(f, size) && (cand == nil || order(f, cand) < 0) {
			cand = f
		}
	}
}

func (indexed) reserve(c *Core, x *opIndex, s *opShare, size int64) {
	c.reserveLater(x, s, size)
}

func (indexed) idle(c *Core, x *opIndex, not *worker, size int64) *worker {
	var best *worker
	c.rs = append(c.rs[:0], x.use(byIdle))
	c.walker.walk(c.rs, orders[byIdle], func(w *worker) bool {
		if w != not && c.fits(w, size) {
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

func (indexed) anyRoom(c *Core) bool { return c.roomCount > 0 }

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

package scheduler

// Reservations. When a unit of a pass does not fit the byte budget of any
// worker with room, the workers with room but not budget for it are
// reserved for the rest of the pass: they must drain first, and later
// units (of later jobs, other operations, speculation) do not take the
// room the unit waits for. When most workers are busy up to their
// budgets that is nearly every worker, so the core does not mark them:
// it notes the reservation (reserveLater) and asks, of a worker a query
// visits, whether some noted reservation covers it (reserved). A worker
// is covered by a reservation made before its last send of the pass only
// if that send came first: one picked after the reservation was not
// covered when picked, and nothing but a send changes what a reservation
// reads of a worker within a pass.

// reservation is a unit of size bytes of x's operation that fitted no
// worker with room among those share s allows (s nil: all of x's), noted
// as the seq'th of the core.
type reservation struct {
	x    *opIndex
	s    *opShare
	size int64
	seq  int
}

// reserve keeps w's room for a unit waiting for its byte budget, for the
// rest of this dispatch pass.
func (c *Core) reserve(w *worker) {
	if w.reserved {
		return
	}
	w.reserved = true
	c.reserved = append(c.reserved, w)
}

// reserveLater reserves, for the rest of this pass, the workers with
// room that share s allows (s nil: every worker of x) and that a unit of
// size bytes does not fit, in O(1).
func (c *Core) reserveLater(x *opIndex, s *opShare, size int64) {
	if s != nil && s.pool > 0 {
		s = nil // the pool is open to every worker of x
	}
	c.resSeq++
	c.reservations = append(c.reservations, reservation{x: x, s: s, size: size, seq: c.resSeq})
}

// isReserved reports whether w's room is kept for a unit of this pass.
// It costs O(reservations of the pass × operations w runs).
func (c *Core) isReserved(w *worker) bool {
	if w.reserved {
		return true
	}
	for _, r := range c.reservations {
		if (w.sentPass != c.pass || w.sentSeq < r.seq) && r.covers(w) {
			return true
		}
	}
	return false
}

// covers reports whether r, made in w's state now, reserves w.
func (r *reservation) covers(w *worker) bool {
	if !w.key.room || w.budgetFits(r.size) {
		return false
	}
	if r.s != nil {
		return r.s.members[w.name] != nil && r.s.left[w.name] > 0
	}
	for _, m := range w.opm {
		if m.x == r.x {
			return true
		}
	}
	return false
}

// sent records that a unit just went to w, for isReserved.
func (c *Core) sent(w *worker) { w.sentPass, w.sentSeq = c.pass, c.resSeq }

// fits reports whether a unit of size bytes may go to w now: it fits w's
// byte budget and w is not reserved.
func (c *Core) fits(w *worker, size int64) bool {
	return w.budgetFits(size) && !c.isReserved(w)
}

// roomFor is w's freeStream for a unit of size bytes: -1 if the unit may
// not go there now (fits).
func (c *Core) roomFor(w *worker, size int64) int {
	if !c.fits(w, size) {
		return -1
	}
	return w.freeStream()
}

// unreserve ends the last pass's reservations.
func (c *Core) unreserve() {
	for _, w := range c.reserved {
		w.reserved = false
	}
	clear(c.reserved)
	c.reserved = c.reserved[:0]
	clear(c.reservations)
	c.reservations = c.reservations[:0]
}

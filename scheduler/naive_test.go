package scheduler

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// naive is the reference finder: it scans every worker for each query, as
// the core did before it kept indexes. It reads the workers' own fields,
// never the keys the indexes rank by, so it also catches a key that was
// not refreshed.
type naive struct {
	names []string // the workers' names, sorted
}

var _ finder = &naive{}

// all lists every worker the core knows, up or not, by name.
func (f *naive) all(c *Core) []*worker {
	if len(f.names) != len(c.workers) { // names are never forgotten
		f.names = slices.Sorted(maps.Keys(c.workers))
	}
	c.work.visits += uint64(len(f.names))
	ws := make([]*worker, len(f.names))
	for k, n := range f.names {
		ws[k] = c.workers[n]
	}
	return ws
}

func (f *naive) capable(c *Core, x *opIndex) []*worker {
	var ws []*worker
	for _, w := range f.all(c) {
		if w.can(x.op) {
			ws = append(ws, w)
		}
	}
	return ws
}

func (f *naive) allMeasured(c *Core, x *opIndex) bool {
	for _, w := range f.capable(c, x) {
		if _, ok := w.estUnitTime(); !ok {
			return false
		}
	}
	return true
}

// naiveSpeed is speedOf from the worker's fields.
func naiveSpeed(c *Core, w *worker) float64 {
	if r := w.rate(); r > 0 {
		return r / w.parallel()
	}
	x := float64(w.threads) / w.parallel()
	if c.rateThreads == 0 {
		return x
	}
	return x * (c.rateSum / float64(c.rateThreads))
}

func (f *naive) bestRoom(c *Core, x *opIndex, s *opShare, size int64) *worker {
	var best *worker
	var bestSpeed float64
	for _, w := range f.capable(c, x) {
		if c.roomFor(w, size) < 0 || (s != nil && !s.allows(w.name)) {
			continue
		}
		speed := naiveSpeed(c, w)
		if best == nil || cmp.Or(cmp.Compare(w.depth(), best.depth()), cmp.Compare(bestSpeed, speed)) < 0 {
			best, bestSpeed = w, speed
		}
	}
	return best
}

func (f *naive) earliest(c *Core, x *opIndex, room bool, size int64) *worker {
	var best *worker
	var bestT time.Duration
	for _, w := range f.capable(c, x) {
		if t, ok := c.finish(w, room, size); ok && (best == nil || t < bestT) {
			best, bestT = w, t
		}
	}
	return best
}

func (f *naive) reserve(c *Core, x *opIndex, s *opShare, size int64) {
	for _, w := range f.capable(c, x) {
		if w.freeStream() >= 0 && !c.fits(w, size) && (s == nil || s.allows(w.name)) {
			c.reserve(w)
		}
	}
}

func (f *naive) idle(c *Core, x *opIndex, not *worker, size int64) *worker {
	var best *worker
	for _, w := range f.capable(c, x) {
		if w == not || w.idleStream() < 0 || !c.fits(w, size) {
			continue
		}
		if best == nil || fasterThan(w, best) {
			best = w
		}
	}
	return best
}

func fasterThan(a, b *worker) bool {
	ta, oka := a.estUnitTime()
	tb, okb := b.estUnitTime()
	if oka != okb {
		return oka
	}
	return cmp.Compare(ta, tb) < 0
}

func (f *naive) candidates(c *Core, j *job) []int {
	var out []int
	for _, w := range f.all(c) {
		for _, r := range w.held {
			if r.j != j {
				continue
			}
			if u := j.run(r.i); j.state(r.i) == unitRunning && len(u.copies) == 1 && !u.duplicated {
				out = append(out, r.i)
			}
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		return cmp.Or(j.run(a).copies[0].sent.Compare(j.run(b).copies[0].sent), cmp.Compare(a, b))
	})
	return out
}

func (f *naive) anyRoom(c *Core) bool {
	for _, w := range f.all(c) {
		if w.up && w.freeStream() >= 0 {
			return true
		}
	}
	return false
}

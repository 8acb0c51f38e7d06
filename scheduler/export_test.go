package scheduler

import "math"

// NewNaive returns a core whose placement queries scan every worker (the
// reference finder of naive_test.go) instead of walking its indexes.
func NewNaive(cfg Config) *Core {
	c := New(cfg)
	c.find = &naive{}
	return c
}

// SetLazySlack sets how many updates a ranking not used takes before it
// is dropped, beyond four per member, and returns the old figure.
func SetLazySlack(n int) int {
	old := lazySlack
	lazySlack = n
	return old
}

// CheckIndexes checks what the core keeps incrementally against what a
// scan of its workers gives: the count of workers with room, the totals
// behind the mean rate, each index's members and their keys, and the
// pending units each operation's index counts for Demand. It returns a
// description of the first difference, "" if none.
func (c *Core) CheckIndexes() string {
	room, threads, sum := 0, 0, 0.0
	for _, w := range c.workers {
		if !w.up {
			continue
		}
		if k := w.computeKey(); k != w.key {
			return "stale key of " + w.name
		}
		if w.key.room {
			room++
		}
		if w.key.measured {
			threads += w.threads
			sum += w.rate()
		}
	}
	if room != c.roomCount {
		return "room count"
	}
	if threads != c.rateThreads || math.Abs(sum-c.rateSum) > 1e-9*math.Max(1, sum) {
		return "rate totals"
	}
	for op, x := range c.opIdx {
		n, idle, demand := 0, 0, 0
		for _, w := range c.workers {
			if w.can(op) {
				n++
				if w.key.idle {
					idle++
				}
			}
		}
		for _, j := range c.live {
			for _, q := range j.ops {
				if q.op == op {
					demand += q.pending - q.held
				}
			}
		}
		if n != len(x.members) {
			return "members of " + op
		}
		if demand != x.demand {
			return "demand of " + op
		}
		if idle != x.idle {
			return "idle count of " + op
		}
		for _, r := range x.ranks {
			if !r.built {
				for _, m := range x.members {
					if m.slots[r.kind].pos != -1 {
						return "a slot in a ranking not kept, of " + op
					}
				}
				continue
			}
			want := 0
			for _, w := range c.workers {
				if w.can(op) && r.wants(w) {
					want++
				}
			}
			if want != len(r.items) {
				return "ranking of " + op + " misses members"
			}
			for i, e := range r.items {
				if k := r.kind.entryKey(e.s.w); e.s.pos != i || !r.wants(e.s.w) || k.a != e.a || k.b != e.b || k.name != e.name ||
					(i > 0 && r.kind.compare(r.items[(i-1)/2].s.w, e.s.w) > 0) {
					return "ranking of " + op
				}
			}
		}
	}
	return ""
}

// Work reports what placement has done so far (work.go): the worker
// records it looked at and the ranking entries it moved.
func (c *Core) Work() (visits, moves uint64) { return c.work.visits, c.work.moves }

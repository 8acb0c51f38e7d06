package scheduler

import (
	"cmp"
	"strings"
)

// ranking is a set of workers in a binary heap by one order, each member
// knowing its place, so that a worker whose key changed moves in
// O(log n) and the members can be visited best first (walk) without
// looking at the others.
type ranking struct {
	items []entry
	kind  rankKind
	share *opShare // a share's ranking holds only workers with some of it left
	x     *opIndex // an operation's ranking: of its room kinds, only workers that fit x.fitSize
	// A lazy ranking is kept (built) only while queries use it: one not
	// used for a while (unused updates, counted since the last use) is
	// dropped, and built again, in O(n), when next used.
	lazy, built bool
	unused      int
	work        *work // the core's
}

// slot is a worker's place in one ranking.
type slot struct {
	w   *worker
	r   *ranking
	pos int // in r.items; -1: not a member
}

// entry is a member of a ranking: its key for the ranking's order, kept
// in the heap itself so that ordering does not chase pointers.
type entry struct {
	a    int64   // first
	b    float64 // then
	name string  // then the worker's name
	s    *slot
}

// entryKey is w's key in a ranking of kind k: compare orders by it.
func (k rankKind) entryKey(w *worker) entry {
	wk := &w.key
	e := entry{name: w.name}
	switch k {
	case byRoomMeasured, byRoomUnmeasured:
		e.a, e.b = int64(wk.depth), -wk.speed
	case byRoomFinish, byFinish:
		e.a = int64(wk.finish)
	case byIdle:
		e.a = int64(wk.unitTime)
		if !wk.measured {
			e.a |= 1 << 62
		}
	case bySpare:
		e.a = -wk.spare
	}
	return e
}

func (e *entry) less(f *entry) bool {
	if e.a != f.a {
		return e.a < f.a
	}
	if e.b != f.b {
		return e.b < f.b
	}
	return e.name < f.name
}

// rankKind says which workers a ranking holds and in which order: the
// orders the placement queries walk (find.go). Keys are the worker's as of
// its last refresh (workerKey).
type rankKind uint8

const (
	// byRoomMeasured and byRoomUnmeasured hold the workers with room,
	// measured or not, by (depth, speed descending, name): what pick
	// compares under shares or before every worker is measured.
	byRoomMeasured rankKind = iota
	byRoomUnmeasured
	// byRoomFinish holds the measured workers with room by when they would
	// finish a unit given now, then name.
	byRoomFinish
	// byFinish holds the measured workers with a leased stream by the same
	// key, room or not: what worthPlacing compares with.
	byFinish
	// byIdle holds the workers with an idle leased stream, measured ones
	// first, then by unit time, then name: where speculation puts copies.
	byIdle
	// bySpare holds the workers with room by their spare bytes,
	// descending: a unit of size bytes fits exactly the members down to
	// the first with less than size spare, which is how a room query
	// finds the few that fit when most members' budgets are nearly spent
	// (find.go).
	bySpare
	numOpRanks
)

// wants reports whether w belongs in r.
func (r *ranking) wants(w *worker) bool {
	k := &w.key
	var in bool
	switch r.kind {
	case byRoomMeasured, byRoomFinish:
		in = r.roomy(k) && k.measured
	case byRoomUnmeasured:
		in = r.roomy(k) && !k.measured
	case bySpare:
		in = r.roomy(k)
	case byFinish:
		in = k.measured && k.lease > 0
	case byIdle:
		in = k.idle
	}
	return in && (r.share == nil || r.share.left[w.name] > 0)
}

// roomy reports whether a worker of key k has room as r's room kinds
// count it: window room, and byte room for a unit of its index's fitSize.
func (r *ranking) roomy(k *workerKey) bool {
	return k.room && (r.x == nil || k.spare >= r.x.fitSize)
}

// orders are the kinds' compare methods as funcs made once, for walks,
// which keep the order they walk by.
var orders = func() (o [numOpRanks]func(a, b *worker) int) {
	for k := range o {
		o[k] = rankKind(k).compare
	}
	return o
}()

// compare orders workers as r's kind does.
func (k rankKind) compare(a, b *worker) int {
	ka, kb := &a.key, &b.key
	var c int
	switch k {
	case byRoomMeasured, byRoomUnmeasured:
		c = cmp.Or(cmp.Compare(ka.depth, kb.depth), cmp.Compare(kb.speed, ka.speed))
	case byRoomFinish, byFinish:
		c = cmp.Compare(ka.finish, kb.finish)
	case byIdle:
		c = cmp.Or(-cmpBool(ka.measured, kb.measured), cmp.Compare(ka.unitTime, kb.unitTime))
	case bySpare:
		c = cmp.Compare(kb.spare, ka.spare)
	}
	if c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func (r *ranking) less(i, j int) bool { return r.items[i].less(&r.items[j]) }

func (r *ranking) swap(i, j int) {
	r.work.moves++
	r.items[i], r.items[j] = r.items[j], r.items[i]
	r.items[i].s.pos, r.items[j].s.pos = i, j
}

func (r *ranking) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !r.less(i, p) {
			return
		}
		r.swap(i, p)
		i = p
	}
}

func (r *ranking) down(i int) bool {
	moved := false
	for {
		l, m := 2*i+1, i
		if l < len(r.items) && r.less(l, m) {
			m = l
		}
		if l+1 < len(r.items) && r.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			return moved
		}
		r.swap(i, m)
		i, moved = m, true
	}
}

func (r *ranking) insert(s *slot) {
	s.pos = len(r.items)
	e := r.kind.entryKey(s.w)
	e.s = s
	r.items = append(r.items, e)
	r.up(s.pos)
}

func (r *ranking) remove(s *slot) {
	i, n := s.pos, len(r.items)-1
	if i != n {
		r.swap(i, n)
	}
	r.items[n] = entry{}
	r.items = r.items[:n]
	s.pos = -1
	if i != n {
		r.fix(i)
	}
}

// rekey takes member s's key anew and restores the heap.
func (r *ranking) rekey(s *slot) {
	e := r.kind.entryKey(s.w)
	e.s = s
	r.items[s.pos] = e
	r.fix(s.pos)
}

// fix restores the heap after the key of the member at i changed.
func (r *ranking) fix(i int) {
	if !r.down(i) {
		r.up(i)
	}
}

// update puts s's worker in or out of its ranking, or moves it, after its
// key changed.
func (s *slot) update() {
	r := s.r
	if !r.built {
		return
	}
	if r.lazy {
		if r.unused++; r.unused > 4*len(r.items)+lazySlack {
			r.drop()
			return
		}
	}
	want := r.wants(s.w)
	switch {
	case want && s.pos < 0:
		r.insert(s)
	case !want && s.pos >= 0:
		r.remove(s)
	case want:
		r.rekey(s)
	}
}

// lazySlack is how many updates more than four per member a lazy ranking
// takes unused before it is dropped (tests lower it).
var lazySlack = 1024

// drop stops keeping a lazy ranking.
func (r *ranking) drop() {
	r.work.visits += uint64(len(r.items))
	for _, e := range r.items {
		e.s.pos = -1
	}
	clear(r.items)
	r.items, r.built, r.unused = r.items[:0], false, 0
}

// leave takes s's worker out of its ranking.
func (s *slot) leave() {
	if s.pos >= 0 {
		s.r.remove(s)
	}
}

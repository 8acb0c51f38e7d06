package scheduler

import (
	"math"
	"time"
)

// The core keeps, for each operation of its live jobs, an index of the up
// workers that can run it (opIndex): rankings by the keys placement
// compares (rank.go), updated whenever a worker's key changes (refresh),
// so that placing a unit costs O(log workers) however many there are.
// Static shares have rankings of their own, of the holders with some share
// left. Counts kept beside them answer anyRoom, allMeasured and the speed
// policy's mean rate in O(1).

// workerKey is what the indexes rank a worker by, as of its last refresh.
type workerKey struct {
	room     bool // window room on a leased stream and byte room for a unit, reservations aside
	idle     bool // a leased stream with nothing in flight
	measured bool // estUnitTime known
	lease    int
	depth    int           // the least units in flight on a leased stream (0 with none leased)
	unitTime time.Duration // estUnitTime
	finish   time.Duration // (depth+1) × unitTime: when a unit given now would be done
	// speed is the rate per leased stream: measured, or for an
	// unmeasured worker its threads per leased stream, which the core's
	// mean rate per thread scales (speedOf).
	speed   float64
	rate    float64 // rate(), counted in the core's mean when measured
	threads int
	// spare is the bytes of byte budget left (budgetFits(spare) holds,
	// budgetFits(spare+1) does not); math.MaxInt64 for no limit.
	spare int64
}

func (w *worker) computeKey() workerKey {
	k := workerKey{lease: w.lease, threads: w.threads}
	k.unitTime, k.measured = w.estUnitTime()
	if w.lease > 0 {
		k.depth = w.inflight[0]
		for _, n := range w.leased() {
			k.depth = min(k.depth, n)
			k.idle = k.idle || n == 0
		}
		k.spare = w.spareBytes()
		k.room = k.depth < w.window && k.spare >= 1
	}
	k.finish = time.Duration(k.depth+1) * k.unitTime
	if k.measured {
		k.rate = w.rate()
		k.speed = k.rate / w.parallel()
	} else {
		k.speed = float64(w.threads) / w.parallel()
	}
	return k
}

// opIndex ranks the up workers that can run one operation. Its rankings
// are kept only while queries use them (ranking.lazy).
type opIndex struct {
	op         string
	members    []*opMember // in no order
	unmeasured int         // members not yet measured
	idle       int         // members with an idle leased stream
	ranks      [numOpRanks]*ranking
	// fitSize is the least unit size (at least 1 byte) a room query has
	// asked of x: its room rankings hold only the workers that a unit of
	// that size fits, so that while its units are of one size a query
	// visits no worker whose budget is nearly spent (fitRoom).
	fitSize   int64
	users     int // live jobs with a queue of op
	demand    int // their units of op pending and not held (Demand)
	idleSince int // Core.opClock when users fell to 0
}

// opMember is a worker's membership of an opIndex.
type opMember struct {
	x     *opIndex
	pos   int // in x.members
	slots [numOpRanks]slot
}

// w is m's worker.
func (m *opMember) w() *worker { return m.slots[0].w }

// use returns x's ranking of kind k, building it if it is not kept.
func (x *opIndex) use(k rankKind) *ranking {
	r := x.ranks[k]
	r.unused = 0
	if r.built {
		return r
	}
	r.work.visits += uint64(len(x.members))
	for _, m := range x.members {
		if s := &m.slots[k]; r.wants(s.w) {
			s.pos = len(r.items)
			e := k.entryKey(s.w)
			e.s = s
			r.items = append(r.items, e)
		}
	}
	for i := len(r.items)/2 - 1; i >= 0; i-- {
		r.down(i)
	}
	r.built = true
	return r
}

// fitRoom readies x's room rankings for a query of a unit of size bytes:
// one smaller than any before lowers x's fitSize, and the room rankings,
// which held too few, are built again when next used. Units of one size
// cost this once; each smaller size, O(members) once more.
func (x *opIndex) fitRoom(size int64) {
	size = max(size, 1)
	if size >= x.fitSize {
		return
	}
	x.fitSize = size
	for _, k := range []rankKind{byRoomMeasured, byRoomUnmeasured, byRoomFinish, bySpare} {
		if r := x.ranks[k]; r.built {
			r.drop()
		}
	}
}

// shareMember is a share holder's place in the share's rankings.
type shareMember struct {
	s     *opShare
	slots [len(shareRanks)]slot
}

// maxIdleOps is how many indexes of operations no live job has the core
// keeps, so that a stream of small jobs does not rebuild them each time.
const maxIdleOps = 16

// useOp returns the index of op for a job going live, building it if
// there is none.
func (c *Core) useOp(op string) *opIndex {
	x := c.opIdx[op]
	if x == nil {
		x = &opIndex{op: op, fitSize: math.MaxInt64}
		for k := range x.ranks {
			x.ranks[k] = &ranking{kind: rankKind(k), x: x, lazy: true, work: &c.work}
		}
		c.opIdx[op] = x
		c.opOrder = append(c.opOrder, x)
		c.work.visits += uint64(len(c.names))
		for _, n := range c.names {
			if w := c.workers[n]; w.up && w.has(op) {
				c.joinOp(w, x)
			}
		}
	}
	x.users++
	return x
}

// unuseOp is useOp's undo, when a job retires. The index of an operation
// no live job has is kept, up to maxIdleOps of them, the oldest dropped.
func (c *Core) unuseOp(x *opIndex) {
	if x.users--; x.users > 0 {
		return
	}
	c.opClock++
	x.idleSince = c.opClock
	c.idleOps = append(c.idleOps, idleOp{x, c.opClock})
	kept := c.idleOps[:0]
	for _, e := range c.idleOps {
		if e.x.users == 0 && e.x.idleSince == e.since && c.opIdx[e.x.op] == e.x {
			kept = append(kept, e)
		}
	}
	if len(kept) > maxIdleOps {
		c.dropOp(kept[0].x)
		kept = append(kept[:0], kept[1:]...)
	}
	c.idleOps = kept
}

// idleOp is an index no live job used since the core's opClock read since.
type idleOp struct {
	x     *opIndex
	since int
}

// dropOp forgets x: its members leave it.
func (c *Core) dropOp(x *opIndex) {
	delete(c.opIdx, x.op)
	for k, o := range c.opOrder {
		if o == x {
			c.opOrder = append(c.opOrder[:k], c.opOrder[k+1:]...)
			break
		}
	}
	c.work.visits += uint64(len(x.members))
	for _, xm := range x.members {
		w := xm.w()
		for k, m := range w.opm {
			if m.x == x {
				w.opm = append(w.opm[:k], w.opm[k+1:]...)
				break
			}
		}
	}
}

// joinOp makes up worker w a member of x.
func (c *Core) joinOp(w *worker, x *opIndex) {
	m := &opMember{x: x, pos: len(x.members)}
	x.members = append(x.members, m)
	if !w.key.measured {
		x.unmeasured++
	}
	if w.key.idle {
		x.idle++
	}
	for k := range m.slots {
		m.slots[k] = slot{w: w, r: x.ranks[k], pos: -1}
		m.slots[k].update()
	}
	w.opm = append(w.opm, m)
}

// leaveOp takes w out of m's index.
func (c *Core) leaveOp(w *worker, m *opMember) {
	x := m.x
	for k := range m.slots {
		m.slots[k].leave()
	}
	last := len(x.members) - 1
	if m.pos != last {
		moved := x.members[last]
		x.members[m.pos] = moved
		moved.pos = m.pos
	}
	x.members[last] = nil
	x.members = x.members[:last]
	if !w.key.measured {
		x.unmeasured--
	}
	if w.key.idle {
		x.idle--
	}
}

// join indexes w, just up.
func (c *Core) join(w *worker) {
	w.key = w.computeKey()
	c.count(w.key, 1)
	for _, x := range c.opOrder {
		if w.has(x.op) {
			c.joinOp(w, x)
		}
	}
}

// leave takes w, going down, out of every index.
func (c *Core) leave(w *worker) {
	for _, m := range w.opm {
		c.leaveOp(w, m)
	}
	for _, m := range w.shm {
		for k := range m.slots {
			m.slots[k].leave()
		}
		delete(m.s.members, w.name)
	}
	w.opm, w.shm = nil, nil
	c.count(w.key, -1)
}

// refresh re-ranks up worker w after anything its key depends on changed:
// what it has in flight, its lease, window, byte budget or speed.
func (c *Core) refresh(w *worker) {
	if !w.up {
		return
	}
	old := w.key
	k := w.computeKey()
	if k == old {
		return
	}
	c.count(old, -1)
	c.count(k, 1)
	w.key = k
	for _, m := range w.opm {
		m.x.unmeasured -= cmpBool(k.measured, old.measured)
		m.x.idle += cmpBool(k.idle, old.idle)
		for i := range m.slots {
			m.slots[i].update()
		}
	}
	for _, m := range w.shm {
		m.update()
	}
}

// count adds (d 1) or takes away (d -1) an up worker's key from the
// core's totals.
func (c *Core) count(k workerKey, d int) {
	if k.room {
		c.roomCount += d
	}
	if k.measured {
		c.rateSum += float64(d) * k.rate
		c.rateThreads += d * k.threads
		if c.rateThreads == 0 {
			c.rateSum = 0
		}
	}
}

// indexShare gives share s rankings of its holders ws.
func (c *Core) indexShare(s *opShare, ws []*worker) {
	s.members = make(map[string]*shareMember, len(ws))
	for _, kind := range shareRanks {
		s.ranks = append(s.ranks, &ranking{kind: kind, share: s, built: true, work: &c.work})
	}
	for _, w := range ws {
		m := &shareMember{s: s}
		for k := range m.slots {
			m.slots[k] = slot{w: w, r: s.ranks[k], pos: -1}
			m.slots[k].update()
		}
		s.members[w.name] = m
		w.shm = append(w.shm, m)
	}
}

// changed re-ranks holder w in s after its share changed.
func (s *opShare) changed(w string) {
	if m := s.members[w]; m != nil {
		m.update()
	}
}

// shareRanks are the kinds of a share's rankings, in s.ranks' order: the
// room rankings a query walks by order, then the one by spare bytes.
var shareRanks = [...]rankKind{byRoomMeasured, byRoomUnmeasured, bySpare}

// bySpareShare is the place of bySpare in shareRanks.
const bySpareShare = 2

// update re-ranks m's worker in each of its share's rankings.
func (m *shareMember) update() {
	for k := range m.slots {
		m.slots[k].update()
	}
}

// unindexShare drops s's rankings, its job done.
func (s *opShare) unindex() {
	for name, m := range s.members {
		w := m.slots[0].w
		for k, o := range w.shm {
			if o == m {
				w.shm = append(w.shm[:k], w.shm[k+1:]...)
				break
			}
		}
		delete(s.members, name)
	}
	s.ranks = nil
}

package worker

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// lender lends the worker's threads to its associations by demand
// (docs/leases.md). Each association holds a loan: its stream count, what
// its server last asked for (want, or more if it sent a unit on a stream
// beyond what its demand earned: arrived), its lease, the number of its
// first streams the server may use now, and how much of that its demand
// earned. Leases never add up to more than the worker's threads; when
// several servers ask, each gets a max-min fair share; a server that
// stops asking keeps what it earned for idle, so that short lulls between
// jobs do not move threads back and forth; and threads no demand takes
// are lent all the same, back to those that held them, then to whoever
// has streams for them (lendSpare), until another server asks.
type lender struct {
	threads int
	idle    time.Duration
	now     func() time.Time

	mu       sync.Mutex // guards everything below and every loan's fields but seq, slots, gate's identity and kick
	loans    []*loan    // in admission order
	seq      int
	draining bool
	timer    *time.Timer // re-runs the division when a held lease expires
}

// loan is one association's share of the threads.
type loan struct {
	seq   int
	slots int // the association's streams
	want  int
	lease int
	// earned is the part of the lease its demand won in the last division;
	// the rest (lendSpare) goes to the first server that asks for it.
	earned int
	// again: a lease message is owed though the lease did not change, so
	// that the server answers with its real want (arrived).
	again bool
	full  time.Time     // last time the server asked for all it earned
	gate  chan struct{} // closed and replaced when lease changes
	kick  chan struct{} // cap 1: tells the association's control sender
}

func newLender(threads int, idle time.Duration, now func() time.Time) *lender {
	return &lender{threads: threads, idle: idle, now: now}
}

// add registers an association with slots streams; its lease starts at
// the threads no other association holds or asks for (lendSpare), until
// its server asks (or sends a unit: arrived).
func (l *lender) add(slots int) *loan {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	ln := &loan{seq: l.seq, slots: slots, gate: make(chan struct{}), kick: make(chan struct{}, 1)}
	l.loans = append(l.loans, ln)
	l.divideLocked()
	return ln
}

// remove forgets an ended association and lends its threads to the others.
func (l *lender) remove(ln *loan) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loans = slices.DeleteFunc(l.loans, func(o *loan) bool { return o == ln })
	l.divideLocked()
}

// ask records that ln's server could keep n streams busy.
func (l *lender) ask(ln *loan, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln.want >= ln.earned { // it asked for all its lease earned until now
		ln.full = l.now()
	}
	ln.want = min(max(n, 0), ln.slots)
	l.divideLocked()
}

// arrived records that ln's server sent a unit on stream beyond what its
// demand earned: the server counts on the lease it had, so it wants at
// least the streams up to that one, whatever its last want said. A want
// travels on stream 0 behind the units in its send queue, and a large unit
// can hold it there past the idle hold, so that the lease would lapse, and
// the units that arrive be handed back, while the server is sending; or
// the server sends on threads lent it spare (lendSpare), which another
// server's want would take. The division then runs as on a want (a change
// of lease is sent, and the server's answer corrects the want); the lease
// may stay 0 if more servers want threads than there are, and does while
// the worker is stopping. When the lease stays as it was (the unit came
// on a spare stream) the lease is sent again all the same, since only a
// new lease draws the server's answer, and a want raised here and never
// corrected would hold threads against other servers for as long as the
// server's own demand did not change. A unit on a stream its demand
// earned changes nothing (it must not pin a lease the server no longer
// wants). It returns the lease after, under the one lock a unit's arrival
// takes.
func (l *lender) arrived(ln *loan, stream int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := min(stream+1, ln.slots); ln.earned < n && ln.want < n {
		ln.want = n
		before := ln.lease
		l.divideLocked()
		if ln.lease == before {
			ln.again = true
			select {
			case ln.kick <- struct{}{}:
			default:
			}
		}
	}
	return ln.lease
}

// drain takes every lease back for good: the worker is shutting down.
func (l *lender) drain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draining = true
	l.divideLocked()
}

// toSend returns ln's lease, and whether it must be sent even if the
// server already has it (arrived); it clears that.
func (l *lender) toSend(ln *loan) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	again := ln.again
	ln.again = false
	return ln.lease, again
}

// current returns ln's lease and a channel closed when it next changes.
func (l *lender) current(ln *loan) (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ln.lease, ln.gate
}

// leased is the sum of the leases.
func (l *lender) leased() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ln := range l.loans {
		n += ln.lease
	}
	return n
}

// divideLocked recomputes every lease and tells the associations whose
// lease changed.
func (l *lender) divideLocked() {
	now := l.now()
	demand := make([]int, len(l.loans))
	held := make([]int, len(l.loans))
	slots := make([]int, len(l.loans))
	next := time.Time{} // earliest expiry of a held lease
	for i, ln := range l.loans {
		held[i], slots[i] = ln.lease, ln.slots
		demand[i], next = l.demandLocked(ln, now, next)
	}
	alloc := share(l.threads, demand, held)
	for i, ln := range l.loans {
		ln.earned = alloc[i]
	}
	if !l.draining {
		lendSpare(l.threads, alloc, held, slots)
	}
	for i, n := range alloc {
		if ln := l.loans[i]; n != ln.lease {
			ln.lease = n
			close(ln.gate)
			ln.gate = make(chan struct{})
			select {
			case ln.kick <- struct{}{}:
			default:
			}
		}
	}
	l.armLocked(next, now)
}

// demandLocked is how many streams ln should be lent: what its server asks,
// or what its demand earned last while it asked for all of that less than
// idle ago. It also folds that expiry into next.
func (l *lender) demandLocked(ln *loan, now, next time.Time) (int, time.Time) {
	if l.draining {
		return 0, next
	}
	if ln.want >= ln.earned {
		ln.full = now
	}
	if ln.want >= ln.earned || now.Sub(ln.full) >= l.idle {
		return ln.want, next
	}
	if exp := ln.full.Add(l.idle); next.IsZero() || exp.Before(next) {
		next = exp
	}
	return ln.earned, next
}

// armLocked schedules the next division at next (zero: none needed).
func (l *lender) armLocked(next, now time.Time) {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if next.IsZero() {
		return
	}
	l.timer = time.AfterFunc(max(next.Sub(now), time.Millisecond), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.divideLocked()
	})
}

// stop cancels the expiry timer.
func (l *lender) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
}

// lendSpare lends the threads that no demand took, first back to the
// associations that held them, up to what each held, then to those with
// streams left, as share divides threads (each up to its free streams,
// evenly, the remainder to those that hold more): a lease whose idle hold
// ended stays while no other server wants its threads, and a new
// association starts with the threads nobody holds. A lone server's job
// thus starts on every stream at once, instead of a round trip after its
// want (on the streams its last want asked for, 0 between jobs, or on none
// before its first).
// Another server's want still takes them at once: demands come first (in
// share), and a lease held beyond its demand counts for nothing there. Of
// the holders, those that held more go first, then the older, as in share.
func lendSpare(threads int, alloc, held, slots []int) {
	spare := threads
	var short []int
	for i, n := range alloc {
		spare -= n
		if n < held[i] {
			short = append(short, i)
		}
	}
	slices.SortStableFunc(short, func(a, b int) int { return cmp.Or(cmp.Compare(held[b], held[a]), cmp.Compare(a, b)) })
	for _, i := range short {
		g := min(held[i]-alloc[i], spare)
		alloc[i] += g
		spare -= g
	}
	if spare <= 0 {
		return
	}
	room := make([]int, len(alloc))
	for i, n := range alloc {
		room[i] = slots[i] - n
	}
	for i, g := range share(spare, room, alloc) {
		alloc[i] += g
	}
}

// share divides threads among demands, max-min fair: nobody gets more than
// it asks, and whoever gets less than it asks gets at least as much as
// anyone else. Threads left over by an uneven division go first to those
// that hold more now, then to the older, so that leases do not flap.
func share(threads int, demand, held []int) []int {
	alloc := make([]int, len(demand))
	var open []int // indexes whose demand is not met
	for i, d := range demand {
		if d > 0 {
			open = append(open, i)
		}
	}
	for rem := threads; rem > 0 && len(open) > 0; {
		q := rem / len(open)
		if q == 0 {
			slices.SortStableFunc(open, func(a, b int) int { return cmp.Or(cmp.Compare(held[b], held[a]), cmp.Compare(a, b)) })
			for _, i := range open[:rem] {
				alloc[i]++
			}
			break
		}
		for _, i := range open {
			g := min(q, demand[i]-alloc[i])
			alloc[i] += g
			rem -= g
		}
		open = slices.DeleteFunc(open, func(i int) bool { return alloc[i] >= demand[i] })
	}
	return alloc
}

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
// beyond its lease: arrived) and its lease, the number of its first
// streams the server may use now. Leases never add up to more than the
// worker's threads; when several servers ask, each gets a max-min fair
// share; a server that stops asking keeps its lease for idle, so that
// short lulls between jobs do not move threads back and forth, and after
// that for as long as no other server wants the threads (keepSpare).
type lender struct {
	threads int
	idle    time.Duration
	now     func() time.Time

	mu       sync.Mutex // guards everything below and every loan's want, lease and full
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
	full  time.Time     // last time the server asked for its whole lease
	gate  chan struct{} // closed and replaced when lease changes
	kick  chan struct{} // cap 1: tells the association's control sender
}

func newLender(threads int, idle time.Duration, now func() time.Time) *lender {
	return &lender{threads: threads, idle: idle, now: now}
}

// add registers an association with slots streams; its lease is 0 until
// its server asks (or sends a unit: arrived).
func (l *lender) add(slots int) *loan {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	ln := &loan{seq: l.seq, slots: slots, gate: make(chan struct{}), kick: make(chan struct{}, 1)}
	l.loans = append(l.loans, ln)
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
	if ln.want >= ln.lease { // it asked for its whole lease until now
		ln.full = l.now()
	}
	ln.want = min(max(n, 0), ln.slots)
	l.divideLocked()
}

// arrived records that ln's server sent a unit on stream beyond its lease:
// the server still counts on the lease it had, so it wants at least the
// streams up to that one, whatever its last want said. A want travels on
// stream 0 behind the units in its send queue, and a large unit can hold
// it there past the idle hold, so that the lease would lapse, and the
// units that arrive be handed back, while the server is sending. The
// division then runs as on a want (a change of lease is sent, and the
// server's answer corrects the want); the lease may stay 0 if more servers
// want threads than there are, and does while the worker is stopping. A
// unit on a leased stream changes nothing. It returns the lease after,
// under the one lock a unit's arrival takes.
func (l *lender) arrived(ln *loan, stream int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := min(stream+1, ln.slots); ln.lease < n && ln.want < n {
		ln.want = n
		l.divideLocked()
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
	next := time.Time{} // earliest expiry of a held lease
	for i, ln := range l.loans {
		held[i] = ln.lease
		demand[i], next = l.demandLocked(ln, now, next)
	}
	alloc := share(l.threads, demand, held)
	if !l.draining {
		keepSpare(l.threads, alloc, held)
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
// or its current lease while it asked for the whole of it less than idle
// ago. It also folds that expiry into next.
func (l *lender) demandLocked(ln *loan, now, next time.Time) (int, time.Time) {
	if l.draining {
		return 0, next
	}
	if ln.want >= ln.lease {
		ln.full = now
	}
	if ln.want >= ln.lease || now.Sub(ln.full) >= l.idle {
		return ln.want, next
	}
	if exp := ln.full.Add(l.idle); next.IsZero() || exp.Before(next) {
		next = exp
	}
	return ln.lease, next
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

// keepSpare gives threads that no demand took back to the associations that
// held them, up to what each held: a lease whose idle hold ended stays while
// no other server wants its threads, so a lone server's next job starts on
// every stream at once instead of on the few its last want asked for, a
// round trip before its new want is answered. Another server's want still
// takes them at once (its demand comes first in share). Those that held
// more go first, then the older, as in share.
func keepSpare(threads int, alloc, held []int) {
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
		if spare <= 0 {
			return
		}
		g := min(held[i]-alloc[i], spare)
		alloc[i] += g
		spare -= g
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

// Package preauth bounds what a listener spends on peers that have not yet
// proved they know the cluster secret, so that strangers cannot lock out
// the real servers by holding handshake slots.
//
// A listener enters every new connection into a Gate before the braid
// handshake and takes it out (Leave, or Proved) once the peer has proved
// the secret: its MAC checked out, just before Admit, or its certificate
// chained to the cluster's authority (TLS, DTLS). While inside, a
// connection
//
//   - counts against a total (MaxTotal) and a per-source-address bound
//     (MaxPerSource); a newcomer beyond either evicts one connection
//     instead of being refused, so a flood can delay a real dialer by no
//     more than the time it takes to arrive;
//   - has Quiet (about a second) to send its first handshake message
//     (Spoke); one that stays silent longer is evicted. After that only the
//     transport's whole-handshake timeout applies.
//
// Which one a newcomer evicts matters where handshakes take round trips: a
// real dialer's handshake stays in the gate for several of them, and a
// flood that evicts it in the meantime locks it out. So the victim is, in
// this order of preference, from a source that has not proved the secret
// before (Proved) rather than from one that has; one that has not spoken
// rather than one that is under way; from the source that holds the most
// connections (fairness between sources); and the oldest. A silent
// connection that its source announced (Expect: a dialer that proved the
// secret opens its association's further connections) counts as under
// way until the announced ones have arrived, so that a dialer's own
// connections do not evict one another while their first bytes are in
// flight. A newcomer from
// an unproved source evicts only connections from unproved sources, and
// when there are none it is itself refused. Within its own source (the
// MaxPerSource bound) it evicts that source's silent connections first.
//
// Evicting calls the func given to Enter, which must make the handshake
// fail soon (cancel its context, close its connection).
package preauth

import (
	"container/list"
	"maps"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Defaults for a Gate's zero fields.
const (
	DefaultMaxTotal     = 256
	DefaultMaxPerSource = 32
	DefaultQuiet        = time.Second
	// DefaultKnown is how many proved sources a Gate remembers.
	DefaultKnown = 1024
)

// Gate bounds connections awaiting authentication. The zero value uses the
// defaults; a Gate is safe for concurrent use.
type Gate struct {
	MaxTotal, MaxPerSource int
	Quiet                  time.Duration
	// Known bounds the proved sources remembered (default DefaultKnown);
	// beyond it the one proved longest ago is forgotten.
	Known int

	mu     sync.Mutex // guards the fields below and every Slot's elem and spoke
	order  list.List  // of *Slot, oldest first
	perSrc map[netip.Addr]int
	known  map[netip.Addr]time.Time // sources that proved the secret, and when last
	expect map[netip.Addr]int       // connections announced by sources (Expect), not yet arrived
}

// Slot is one connection inside a Gate.
type Slot struct {
	g     *Gate
	src   netip.Addr
	known bool // src had proved the secret when the slot entered
	evict func()
	timer *time.Timer
	elem  *list.Element // nil once the slot has left the gate
	spoke bool
	// pending, if not nil, reports whether the peer's first bytes are
	// waiting (EnterConn).
	pending func() bool
}

// Source is the address a connection is counted under: its IP, without
// the port (IPv4-mapped IPv6 addresses unmapped).
func Source(a net.Addr) netip.Addr {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

func (g *Gate) limits() (total, perSrc int, quiet time.Duration) {
	total, perSrc, quiet = g.MaxTotal, g.MaxPerSource, g.Quiet
	if total <= 0 {
		total = DefaultMaxTotal
	}
	if perSrc <= 0 {
		perSrc = DefaultMaxPerSource
	}
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	return total, perSrc, quiet
}

// Enter admits a connection from src, evicting others beyond the bounds
// (see the package comment); a newcomer that may evict no one is refused:
// its evict func is called before Enter returns. evict is called at most
// once, without the gate's lock held, if this connection is evicted (for a
// newcomer, or silent for Quiet); it must not call back into the Gate.
func (g *Gate) Enter(src netip.Addr, evict func()) *Slot {
	return g.EnterConn(src, nil, evict)
}

// EnterConn is Enter for a connection whose first bytes may be waiting
// before its handshake goroutine has read them: pending, if not nil,
// reports whether they are (without waiting), and a connection found to
// have them counts as spoken (Slot.Spoke), here and when it would be
// chosen as a victim. A real dialer's first message follows its
// connection's setup at once, so a flood of idle connections accepted
// before its goroutine runs does not evict it.
func (g *Gate) EnterConn(src netip.Addr, pending func() bool, evict func()) *Slot {
	total, perSrc, quiet := g.limits()
	spoke := pending != nil && pending()
	g.mu.Lock()
	if g.perSrc == nil {
		g.perSrc = make(map[netip.Addr]int)
	}
	_, known := g.known[src]
	s := &Slot{g: g, src: src, known: known, evict: evict, pending: pending}
	var victims []*Slot
	refused := false
	for g.perSrc[src] >= perSrc {
		victims = append(victims, g.removeVictim(func(o *Slot) bool { return o.src == src }))
	}
	for g.order.Len() >= total && !refused {
		v := g.removeVictim(func(o *Slot) bool { return known || !o.known })
		if v == nil {
			refused = true
			break
		}
		victims = append(victims, v)
	}
	if !refused {
		s.elem = g.order.PushBack(s)
		g.perSrc[src]++
		s.spoke = spoke
		s.timer = time.AfterFunc(quiet, s.expire)
		if spoke {
			s.timer.Stop()
		}
	}
	g.mu.Unlock()
	for _, v := range victims {
		v.evict()
	}
	if refused {
		evict()
	}
	return s
}

// removeVictim takes out of the gate the slot that a newcomer evicts among
// those that may (see the package comment), or returns nil if none may.
// The caller holds g.mu.
func (g *Gate) removeVictim(may func(*Slot) bool) *Slot {
	announced := g.announcedLocked()
	for {
		var v *Slot
		for e := g.order.Front(); e != nil; e = e.Next() { // oldest first: ties go to the oldest
			if o := e.Value.(*Slot); may(o) && (v == nil || g.worse(o, v, announced)) {
				v = o
			}
		}
		if v != nil && !v.spoke && v.pending != nil && v.pending() {
			v.spoke = true // its bytes came before its goroutine ran: choose again
			v.timer.Stop()
			continue
		}
		if v != nil {
			g.remove(v)
		}
		return v
	}
}

// worse reports whether a is a better victim than b: from an unproved
// source, silent (and not announced), from a source holding more. The
// caller holds g.mu.
func (g *Gate) worse(a, b *Slot, announced map[*Slot]bool) bool {
	if a.known != b.known {
		return !a.known
	}
	aSpoke, bSpoke := a.spoke || announced[a], b.spoke || announced[b]
	if aSpoke != bSpoke {
		return !aSpoke
	}
	return g.perSrc[a.src] > g.perSrc[b.src]
}

// announcedLocked returns the silent slots that count as under way: for
// each source with connections announced (Expect), that many of its
// newest silent slots. It returns nil when no source announced any. The
// caller holds g.mu.
func (g *Gate) announcedLocked() map[*Slot]bool {
	if len(g.expect) == 0 {
		return nil
	}
	left := maps.Clone(g.expect)
	announced := make(map[*Slot]bool)
	for e := g.order.Back(); e != nil; e = e.Prev() {
		if o := e.Value.(*Slot); !o.spoke && left[o.src] > 0 {
			announced[o] = true
			left[o.src]--
		}
	}
	return announced
}

// Expect announces n more connections from the slot's source: a peer
// that has just proved the secret (Proved) is about to open them, for one
// association. Until each has arrived (arrived, called once per
// connection) or the wait ends (done), that many of the source's newest
// silent connections count as under way when a newcomer chooses whom to
// evict. done is idempotent and withdraws what has not arrived.
func (s *Slot) Expect(n int) (arrived func(), done func()) {
	g := s.g
	var mu sync.Mutex // guards left
	left := n
	take := func(k int) {
		mu.Lock()
		k = min(k, left)
		left -= k
		mu.Unlock()
		if k <= 0 || !s.src.IsValid() {
			return
		}
		g.mu.Lock()
		if g.expect[s.src] -= k; g.expect[s.src] <= 0 {
			delete(g.expect, s.src)
		}
		g.mu.Unlock()
	}
	if n > 0 && s.src.IsValid() {
		g.mu.Lock()
		if g.expect == nil {
			g.expect = make(map[netip.Addr]int)
		}
		g.expect[s.src] += n
		g.mu.Unlock()
	}
	return func() { take(1) }, func() { take(n) }
}

// remove takes s out of the gate; g.mu is held. It reports whether s was
// still inside.
func (g *Gate) remove(s *Slot) bool {
	if s.elem == nil {
		return false
	}
	g.order.Remove(s.elem)
	s.elem = nil
	s.timer.Stop()
	if g.perSrc[s.src]--; g.perSrc[s.src] == 0 {
		delete(g.perSrc, s.src)
	}
	return true
}

// Len is the number of connections inside the gate.
func (g *Gate) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.order.Len()
}

// expire evicts a slot whose peer stayed silent for Quiet.
func (s *Slot) expire() {
	s.g.mu.Lock()
	in := s.g.remove(s)
	s.g.mu.Unlock()
	if in {
		s.evict()
	}
}

// Spoke records that the peer sent a well-formed first handshake message:
// the Quiet deadline no longer applies, and newcomers evict silent
// connections first, but the slot still counts and can still be evicted.
func (s *Slot) Spoke() {
	s.g.mu.Lock()
	if s.elem != nil {
		s.spoke = true
		s.timer.Stop()
	}
	s.g.mu.Unlock()
}

// Leave takes the slot out of the gate: the peer authenticated, or its
// handshake ended. It is idempotent, and a no-op after eviction.
func (s *Slot) Leave() {
	s.g.mu.Lock()
	s.g.remove(s)
	s.g.mu.Unlock()
}

// Proved takes the slot out of the gate because its peer proved it knows
// the secret, and remembers its source as proved: while there, newcomers
// from unproved sources cannot evict its later connections.
func (s *Slot) Proved() {
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.remove(s)
	if !s.src.IsValid() {
		return
	}
	if g.known == nil {
		g.known = make(map[netip.Addr]time.Time)
	}
	limit := g.Known
	if limit <= 0 {
		limit = DefaultKnown
	}
	if _, ok := g.known[s.src]; !ok && len(g.known) >= limit {
		g.forgetOldestLocked()
	}
	g.known[s.src] = time.Now()
}

// forgetOldestLocked forgets the source proved longest ago; g.mu is held.
func (g *Gate) forgetOldestLocked() {
	var oldest netip.Addr
	var at time.Time
	for a, t := range g.known {
		if !oldest.IsValid() || t.Before(at) {
			oldest, at = a, t
		}
	}
	delete(g.known, oldest)
}

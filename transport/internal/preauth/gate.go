// Package preauth bounds what a listener spends on peers that have not yet
// proved they know the cluster secret, so that strangers cannot lock out
// the real servers by holding handshake slots.
//
// A listener enters every new connection into a Gate before the braid
// handshake and takes it out (Leave) once the peer's MAC checks out, that
// is, just before Admit. While inside, a connection
//
//   - counts against a total (MaxTotal) and a per-source-address bound
//     (MaxPerSource); a newcomer beyond either evicts the OLDEST connection
//     in that set instead of being refused, so a flood of idle connections
//     can delay a real dialer by no more than the time it takes to arrive;
//   - has Quiet (about a second) to send its first handshake message
//     (Spoke); one that stays silent longer is evicted. After that only the
//     transport's whole-handshake timeout applies.
//
// Evicting calls the func given to Enter, which must make the handshake
// fail soon (cancel its context, close its connection).
package preauth

import (
	"container/list"
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
)

// Gate bounds connections awaiting authentication. The zero value uses the
// defaults; a Gate is safe for concurrent use.
type Gate struct {
	MaxTotal, MaxPerSource int
	Quiet                  time.Duration

	mu     sync.Mutex // guards order and perSrc
	order  list.List  // of *Slot, oldest first
	perSrc map[netip.Addr]int
}

// Slot is one connection inside a Gate.
type Slot struct {
	g     *Gate
	src   netip.Addr
	evict func()
	timer *time.Timer
	elem  *list.Element // nil once the slot has left the gate (guarded by g.mu)
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

// Enter admits a connection from src, evicting the oldest ones beyond the
// bounds. evict is called at most once, without the gate's lock held, if
// this connection is evicted later (too old in a full gate, or silent for
// Quiet); it must not call back into the Gate.
func (g *Gate) Enter(src netip.Addr, evict func()) *Slot {
	total, perSrc, quiet := g.limits()
	s := &Slot{g: g, src: src, evict: evict}
	var victims []*Slot
	g.mu.Lock()
	if g.perSrc == nil {
		g.perSrc = make(map[netip.Addr]int)
	}
	for g.perSrc[src] >= perSrc {
		victims = append(victims, g.removeOldest(func(o *Slot) bool { return o.src == src }))
	}
	for g.order.Len() >= total {
		victims = append(victims, g.removeOldest(func(*Slot) bool { return true }))
	}
	s.elem = g.order.PushBack(s)
	g.perSrc[src]++
	s.timer = time.AfterFunc(quiet, s.expire)
	g.mu.Unlock()
	for _, v := range victims {
		v.evict()
	}
	return s
}

// removeOldest takes the oldest slot matching keep out of the gate. The
// caller holds g.mu and knows there is one.
func (g *Gate) removeOldest(match func(*Slot) bool) *Slot {
	for e := g.order.Front(); e != nil; e = e.Next() {
		if o := e.Value.(*Slot); match(o) {
			g.remove(o)
			return o
		}
	}
	panic("preauth: no slot to evict")
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
// the Quiet deadline no longer applies, but the slot still counts and can
// still be evicted by newcomers.
func (s *Slot) Spoke() {
	s.g.mu.Lock()
	if s.elem != nil {
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

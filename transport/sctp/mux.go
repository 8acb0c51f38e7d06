package sctp

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// mux owns a listener's UDP socket and routes datagrams by remote address.
// The socket closes once the listener is closed and its last association has
// ended, so that accepted associations outlive Listener.Close.
type mux struct {
	pc    *net.UDPConn
	sock  *udpSocket     // pc's batched I/O
	onNew func(c *pconn) // called for an INIT from a new address
	log   func(msg string, args ...any)
	// plainOK says whether plaintext SCTP is taken from a peer (else only
	// DTLS is, dtls.go); refused logs a refusal, at most once a second.
	plainOK func(netip.AddrPort) bool
	refused func(peer netip.AddrPort)

	mu      sync.Mutex // guards conns, half, closing
	conns   map[netip.AddrPort]*pconn
	half    map[*pconn]time.Time // mid-handshake associations and when they began
	maxHalf int
	closing bool
}

func newMux(pc *net.UDPConn, maxHalf int, onNew func(*pconn), log func(string, ...any)) *mux {
	return &mux{pc: pc, sock: newUDPSocket(pc, false), onNew: onNew, log: log,
		conns: map[netip.AddrPort]*pconn{}, half: map[*pconn]time.Time{}, maxHalf: maxHalf}
}

// Half-open associations cost a pion association each, and an INIT costs
// its sender nothing (its source address may be forged), so a listener
// bounds them, in total (Config.MaxHalfOpen) and per source address (an
// eighth of that), and keeps none whose peer has not proved its address
// for long: a peer that has not echoed its state cookie (COOKIE-ECHO,
// which needs the INIT-ACK sent to its address) within proofWait is
// dropped. When a bound is reached a new INIT evicts the oldest unproven
// handshake, of its source if that bound was hit, or if there is none the
// oldest proven one (a peer that has not finished the braid handshake
// yet), rather than being refused, so that neither a flood of forged INITs
// nor peers that associate and stay silent lock a real peer out.
//
// proofWait outlasts two losses of the proof: the dialer resends it after
// one second and then two (pion's first retransmission timeouts, SCTP's
// T1 and DTLS's flight timer alike), so a third try comes three seconds
// in. A handshake dropped sooner strands the dialer: its COOKIE-ECHO
// reaches an unknown peer, and its DTLS cookie a new handshake that
// answers with a new one. The bounds above, not this wait, are what hold
// a flood off.
const (
	proofWait = 5 * time.Second
	// One source address may hold MaxHalfOpen / maxHalfPerSourceDiv
	// handshakes (at least one).
	maxHalfPerSourceDiv = 8
)

// start starts routing datagrams.
func (m *mux) start() { go m.readLoop() }

// readLoop routes packets until the socket is closed.
func (m *mux) readLoop() {
	for {
		p, err := m.sock.rd.next()
		if err != nil {
			return
		}
		if p.from == nil {
			p.rb.release()
			continue
		}
		from := p.from.AddrPort()
		m.route(netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), m.sock.compact(p))
	}
}

// opens tells whether datagram p opens an association: an SCTP INIT, or
// a DTLS ClientHello (sealed).
func opens(p []byte) (opening, sealed bool) {
	if isInit(p) {
		return true, false
	}
	return isClientHello(p), true
}

// route delivers p to its association or starts a new one for an INIT.
func (m *mux) route(from netip.AddrPort, p packet) {
	m.mu.Lock()
	c := m.conns[from]
	opening, sealed := false, false
	if c == nil && !m.closing {
		opening, sealed = opens(p.p)
	}
	if opening {
		if !sealed && m.plainOK != nil && !m.plainOK(from) {
			m.mu.Unlock()
			m.refused(from)
			p.rb.release()
			return
		}
		victim, ok := m.makeRoomLocked(from.Addr())
		if ok {
			c = newPconn(m, from)
			c.sealed = sealed
			m.conns[from] = c
			m.half[c] = time.Now()
			c.proofTimer = time.AfterFunc(proofWait, func() { m.dropUnproven(c) })
			m.onNew(c) // under mu, so that no new association starts after close
		}
		m.mu.Unlock()
		if victim != nil {
			m.log("sctp: dropped a handshake to make room for a new INIT", "peer", victim.raddr, "new", from)
			_ = victim.Close()
		}
		if c == nil {
			m.log("sctp: dropped INIT: every handshake slot is taken", "peer", from)
			p.rb.release()
			return
		}
		c.deliver(p)
		return
	}
	m.mu.Unlock()
	if c == nil {
		m.log("sctp: dropped datagram from unknown peer", "peer", from, "bytes", len(p.p))
		p.rb.release()
		return
	}
	c.deliver(p)
}

// makeRoomLocked makes room for a handshake from src: ok if there is room,
// with the handshake evicted for it, if any, to be closed by the caller.
func (m *mux) makeRoomLocked(src netip.Addr) (victim *pconn, ok bool) {
	perSource := max(1, m.maxHalf/maxHalfPerSourceDiv)
	fromSrc := 0
	for c := range m.half {
		if c.raddr.Addr() == src {
			fromSrc++
		}
	}
	if len(m.half) < m.maxHalf && fromSrc < perSource {
		return nil, true
	}
	var oldest time.Time
	var unproven bool
	for c, born := range m.half {
		if fromSrc >= perSource && c.raddr.Addr() != src {
			continue
		}
		u := !c.proven.Load()
		if victim == nil || (u && !unproven) || (u == unproven && born.Before(oldest)) {
			victim, oldest, unproven = c, born, u
		}
	}
	if victim == nil {
		return nil, false
	}
	m.forgetLocked(victim)
	return victim, true
}

// forgetLocked removes c from the half-open set and the routing table.
func (m *mux) forgetLocked(c *pconn) {
	delete(m.half, c)
	if m.conns[c.raddr] == c {
		delete(m.conns, c.raddr)
	}
}

// dropUnproven closes c if it is still half-open and its peer has not
// echoed its cookie.
func (m *mux) dropUnproven(c *pconn) {
	m.mu.Lock()
	_, half := m.half[c]
	drop := half && !c.proven.Load()
	if drop {
		m.forgetLocked(c)
	}
	m.mu.Unlock()
	if drop {
		m.log("sctp: dropped a handshake whose peer did not echo its cookie in time", "peer", c.raddr)
		_ = c.Close()
	}
}

// established marks c as done with its handshake (successfully or not).
func (m *mux) established(c *pconn) {
	m.mu.Lock()
	delete(m.half, c)
	m.mu.Unlock()
	if c.proofTimer != nil {
		c.proofTimer.Stop()
	}
}

func (m *mux) remove(c *pconn) {
	m.mu.Lock()
	if m.conns[c.raddr] == c {
		delete(m.conns, c.raddr)
	}
	last := m.closing && len(m.conns) == 0
	m.relingerLocked()
	m.mu.Unlock()
	if last {
		_ = m.sock.close()
	}
}

// relinger applies the smallest receive coalescing delay the socket's
// associations want (pconn.linger), so that a short path sharing the
// socket with a long one is not delayed.
func (m *mux) relinger() {
	m.mu.Lock()
	m.relingerLocked()
	m.mu.Unlock()
}

func (m *mux) relingerLocked() {
	d := int64(-1)
	for _, c := range m.conns {
		if l := c.linger.Load(); l >= 0 && (d < 0 || l < d) {
			d = l
		}
	}
	m.sock.linger.Store(max(d, 0))
}

// close stops new associations and closes the socket once none is left.
func (m *mux) close() {
	m.mu.Lock()
	m.closing = true
	last := len(m.conns) == 0
	m.mu.Unlock()
	if last {
		_ = m.sock.close()
	}
}

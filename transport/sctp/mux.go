package sctp

import (
	"net"
	"net/netip"
	"sync"
)

// mux owns a listener's UDP socket and routes datagrams by remote address.
// The socket closes once the listener is closed and its last association has
// ended, so that accepted associations outlive Listener.Close.
type mux struct {
	pc    *net.UDPConn
	sock  *udpSocket     // pc's batched I/O
	onNew func(c *pconn) // called for an INIT from a new address
	log   func(msg string, args ...any)

	mu       sync.Mutex // guards conns, halfOpen, closing
	conns    map[netip.AddrPort]*pconn
	halfOpen int
	maxHalf  int
	closing  bool
}

func newMux(pc *net.UDPConn, maxHalf int, onNew func(*pconn), log func(string, ...any)) *mux {
	return &mux{pc: pc, sock: newUDPSocket(pc, false), onNew: onNew, log: log, conns: map[netip.AddrPort]*pconn{}, maxHalf: maxHalf}
}

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

// route delivers p to its association or starts a new one for an INIT.
func (m *mux) route(from netip.AddrPort, p packet) {
	m.mu.Lock()
	c := m.conns[from]
	if c == nil && !m.closing && m.halfOpen < m.maxHalf && isInit(p.p) {
		c = newPconn(m, from)
		m.conns[from] = c
		m.halfOpen++
		m.onNew(c) // under mu, so that no new association starts after close
		m.mu.Unlock()
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

// established marks one half-open association as done with its handshake
// (successfully or not).
func (m *mux) established() {
	m.mu.Lock()
	m.halfOpen--
	m.mu.Unlock()
}

func (m *mux) remove(c *pconn) {
	m.mu.Lock()
	if m.conns[c.raddr] == c {
		delete(m.conns, c.raddr)
	}
	last := m.closing && len(m.conns) == 0
	m.mu.Unlock()
	if last {
		_ = m.sock.close()
	}
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

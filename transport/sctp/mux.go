package sctp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport/internal/preauth"
)

// mux owns a listener's UDP socket and routes datagrams by remote address.
// The socket closes once the listener is closed and its last association has
// ended, so that accepted associations outlive Listener.Close.
//
// A datagram from an address that has no association is a stranger's: the
// mux answers one that opens a handshake with a stateless cookie, and
// creates an association only for one that returns a valid cookie (see
// cookie.go). Such associations then wait in a preauth.Gate until they
// have authenticated: MaxHalfOpen in all and an eighth of that per source
// address, a newcomer evicting one (preauth's order: from sources that have
// not proved the secret before, silent, from the source holding the most,
// the oldest) rather than being refused, and each given proofWait to send
// the braid handshake's first message.
type mux struct {
	sock  *udpSocket     // the listener's socket
	onNew func(c *pconn) // called for an association from a new address
	log   func(msg string, args ...any)
	// plainOK says whether plaintext SCTP is taken from a peer (else only
	// DTLS is, dtls.go); refused reports a refusal (the listener logs a
	// line per source per interval).
	plainOK func(netip.AddrPort) bool
	refused func(peer netip.AddrPort)

	jar   *cookieJar
	inits initTemplate
	// zeroOK says whether an association with peer accepts zero checksums
	// (Transport.options).
	zeroOK func(peer netip.AddrPort) bool
	gate   preauth.Gate

	mu      sync.Mutex // guards conns, closing
	conns   map[netip.AddrPort]*pconn
	closing bool
	// solo is the listener's only association (nil with none or more
	// than one), set under mu; lender lends it the socket's reader
	// (solo.go).
	solo   atomic.Pointer[pconn]
	lender *lender
}

// newMux takes pc's socket over (pc is closed: see quietFD).
func newMux(pc *net.UDPConn, maxHalf int, inits initTemplate, onNew func(*pconn), log func(string, ...any)) (*mux, error) {
	sock, err := newUDPSocket(pc, false)
	if err != nil {
		return nil, err
	}
	return &mux{sock: sock, onNew: onNew, log: log, jar: newCookieJar(), inits: inits,
		conns: map[netip.AddrPort]*pconn{}, lender: newLender(),
		gate: preauth.Gate{MaxTotal: maxHalf, MaxPerSource: max(1, maxHalf/maxHalfPerSourceDiv), Quiet: proofWait}}, nil
}

const (
	// proofWait is how long an association created from a valid cookie
	// may take to send the braid handshake's first message: the DTLS
	// handshake's remaining two round trips, SCTP's, and one more, with
	// room for a lost flight (pion resends after one second, then two).
	proofWait = 5 * time.Second
	// One source address may hold MaxHalfOpen / maxHalfPerSourceDiv
	// handshakes (at least one).
	maxHalfPerSourceDiv = 8
)

// start starts routing datagrams.
func (m *mux) start() { go m.readLoop() }

// readLoop routes packets until the socket is closed, and lends the
// socket to a sole association's reader that asks for it (solo.go).
func (m *mux) readLoop() {
	defer m.endLending()
	for {
		p, err := m.sock.rd.next()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			m.lend()
			continue
		}
		if err != nil {
			return
		}
		if !p.from.IsValid() {
			p.rb.release()
			continue
		}
		m.route(p.from, m.sock.compact(p))
	}
}

// route delivers p to its association, or treats it as a stranger's.
func (m *mux) route(from netip.AddrPort, p packet) {
	m.mu.Lock()
	c, closing := m.conns[from], m.closing
	m.mu.Unlock()
	switch {
	case c != nil:
		c.deliver(p)
	case closing:
		p.rb.release()
	default:
		m.stranger(from, p)
		p.rb.release()
	}
}

// stranger handles a datagram from an address without an association; p
// stays the caller's.
func (m *mux) stranger(from netip.AddrPort, p packet) {
	switch {
	case isClientHello(p.p):
		m.clientHello(from, p)
	case isInit(p.p) || len(p.p) > sctpCommonHeader && p.p[sctpCommonHeader] == chunkCookieEcho:
		if m.plainOK != nil && !m.plainOK(from) {
			m.refused(from)
			return
		}
		if isInit(p.p) {
			m.answerInit(from, p.p)
		} else {
			m.cookieEcho(from, p)
		}
	default:
		m.log("sctp: dropped datagram from unknown peer", "peer", from, "bytes", len(p.p))
	}
}

// clientHello answers a ClientHello without a valid cookie with one, and
// starts a DTLS association for one with a valid cookie.
func (m *mux) clientHello(from netip.AddrPort, p packet) {
	f, ok := parseClientHello(p.p)
	if !ok || f.msgSeq != 0 {
		m.log("sctp: dropped a ClientHello that is fragmented, malformed, or not a handshake's first", "peer", from)
		return
	}
	if _, _, valid := m.jar.open(from, f.cookie); !valid {
		cookie := m.jar.seal(from, m.jar.stamp(nil))
		m.sock.offer(appendHelloVerify(nil, f.recordSeq, cookie), from)
		return
	}
	m.open(from, func(c *pconn) { c.sealed = true }, p)
}

// answerInit answers an INIT with an INIT-ACK carrying a state cookie.
func (m *mux) answerInit(from netip.AddrPort, p []byte) {
	remote := peerInit(p)
	if remote == nil {
		m.log("sctp: dropped an INIT too long or malformed", "peer", from)
		return
	}
	sc := stateCookie{zero: m.zeroOK(from), remote: remote}
	sc.tag, sc.tsn = randomTagTSN()
	cookie := m.jar.seal(from, sc.append(m.jar.stamp(nil)))
	m.sock.offer(appendInitAck(nil, p, m.inits.local(sc.zero, sc.tag, sc.tsn), cookie), from)
}

// cookieEcho starts a plaintext association for a COOKIE-ECHO whose cookie
// is valid, and answers it with a COOKIE-ACK.
func (m *mux) cookieEcho(from netip.AddrPort, p packet) {
	cookie, ok := cookieEcho(p.p)
	var body []byte
	var age time.Duration
	if ok {
		body, age, ok = m.jar.open(from, cookie)
	}
	var sc stateCookie
	if ok {
		sc, ok = parseStateCookie(body)
	}
	if !ok {
		m.log("sctp: dropped a COOKIE-ECHO without a valid cookie", "peer", from)
		return
	}
	snap := &snapInit{local: m.inits.local(sc.zero, sc.tag, sc.tsn), remote: sc.remote, rtt: age,
		peerTag: binary.BigEndian.Uint32(sc.remote[initTagOffset:]), cookie: append([]byte(nil), cookie...),
		ports: [2]uint16{binary.BigEndian.Uint16(p.p[2:]), binary.BigEndian.Uint16(p.p[0:])}}
	if m.open(from, func(c *pconn) { c.snap = snap }, p) {
		m.sock.offer(appendCookieAck(nil, p.p, snap.peerTag), from)
	}
}

// cookieAckAgain answers a COOKIE-ECHO that c's peer sent again, its
// COOKIE-ACK lost.
func (m *mux) cookieAckAgain(c *pconn, p []byte) {
	if cookie, ok := cookieEcho(p); ok && bytes.Equal(cookie, c.snap.cookie) {
		m.sock.offer(appendCookieAck(nil, p, c.snap.peerTag), c.raddr)
	}
}

// open creates the association of a peer that returned a valid cookie,
// set up by setup, enters it into the gate, starts its handshake and hands
// it p (a copy). It reports whether it did: not if the listener is
// closing, the address has an association already (p goes to it), or the
// gate refused it.
func (m *mux) open(from netip.AddrPort, setup func(*pconn), p packet) bool {
	c := newPconn(m, from)
	setup(c)
	c.slot = m.gate.Enter(from.Addr(), func() {
		m.log("sctp: dropped a handshake to make room for a newer one", "peer", from)
		_ = c.Close()
	})
	m.mu.Lock()
	old := m.conns[from]
	if m.closing || old != nil || c.isClosed() {
		m.mu.Unlock()
		c.slot.Leave()
		_ = c.Close()
		if old != nil {
			p.rb.retain()
			old.deliver(p)
		}
		return false
	}
	m.conns[from] = c
	m.setSoloLocked()
	m.onNew(c) // under mu, so that no new association starts after close
	m.mu.Unlock()
	p.rb.retain()
	c.deliver(p)
	return true
}

// established marks c as done with its handshake (successfully or not).
func (m *mux) established(c *pconn) { c.slot.Leave() }

func (m *mux) remove(c *pconn) {
	m.mu.Lock()
	if m.conns[c.raddr] == c {
		delete(m.conns, c.raddr)
		m.setSoloLocked()
	}
	last := m.closing && len(m.conns) == 0
	m.relingerLocked()
	m.mu.Unlock()
	if last {
		_ = m.sock.close()
	}
}

// setSoloLocked records the listener's only association, if it has one.
// The caller holds mu.
func (m *mux) setSoloLocked() {
	var solo *pconn
	if len(m.conns) == 1 {
		for _, c := range m.conns {
			solo = c
		}
	}
	m.solo.Store(solo)
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

package sctp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"time"
)

// Stateless cookies. A listener keeps no state for a peer until the peer
// has shown that it receives what is sent to its address: it answers the
// datagram that opens a handshake with a cookie and creates the
// association only when a datagram echoes a valid one. Forged datagrams
// (any source address, replayed, at any rate) thus cost it one small
// answer each and no memory, goroutine or handshake slot, and cannot evict
// a real peer's handshake, however many round trips that takes.
//
//   - Plaintext SCTP (init_cookie.go): the listener answers an INIT with an
//     INIT-ACK whose state cookie holds the INIT and the listener's own
//     initiate tag and TSN, sealed with a MAC; a valid COOKIE-ECHO creates
//     the association from them (pion's SNAP: both INITs known), and the
//     listener answers COOKIE-ACK itself.
//   - DTLS (dtls_cookie.go): the listener answers a ClientHello without a
//     valid cookie with a HelloVerifyRequest, and creates the DTLS server
//     only for a ClientHello that carries one. pion/dtls's server keeps its
//     own cookie state, so the braid dialer fetches the cookie first with
//     a ClientHello of its own and then starts its real handshake with the
//     cookie already in its first ClientHello, which the server takes as
//     if the hello had been verified (it was, by the listener).
//
// A cookie is bound to the peer's address and port and to the time it was
// made, and valid for cookieLife.
const (
	cookieLife = 60 * time.Second // RFC 9260's Valid.Cookie.Life
	cookieMAC  = 16               // bytes of HMAC-SHA256 kept
)

// cookieJar makes and checks a listener's cookies; its key lives and dies
// with the listener.
type cookieJar struct {
	key [32]byte
	now func() time.Time
}

func newCookieJar() *cookieJar {
	j := &cookieJar{now: time.Now}
	if _, err := rand.Read(j.key[:]); err != nil {
		panic("sctp: no randomness for the cookie key: " + err.Error())
	}
	return j
}

// mac is the MAC of body for the peer at addr.
func (j *cookieJar) mac(addr netip.AddrPort, body []byte) []byte {
	h := hmac.New(sha256.New, j.key[:])
	a, _ := addr.MarshalBinary()
	h.Write(a)
	h.Write(body)
	return h.Sum(nil)[:cookieMAC]
}

// seal appends to body (which starts with the cookie's issue time, from
// stamp) its MAC for addr.
func (j *cookieJar) seal(addr netip.AddrPort, body []byte) []byte {
	return append(body, j.mac(addr, body)...)
}

// stamp appends the time now, as the cookie's first field.
func (j *cookieJar) stamp(b []byte) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(j.now().UnixNano()))
}

// open checks a sealed cookie for addr and returns its body (after the
// issue time) and its age; ok is false for a forged, tampered, stale or
// foreign one.
func (j *cookieJar) open(addr netip.AddrPort, c []byte) (body []byte, age time.Duration, ok bool) {
	if len(c) < 8+cookieMAC {
		return nil, 0, false
	}
	n := len(c) - cookieMAC
	if !hmac.Equal(c[n:], j.mac(addr, c[:n])) {
		return nil, 0, false
	}
	age = j.now().Sub(time.Unix(0, int64(binary.BigEndian.Uint64(c))))
	if age < 0 || age > cookieLife {
		return nil, 0, false
	}
	return c[8:n], age, true
}

// offer queues a copy of p for to unless the socket's queue is full, when
// it drops it: a listener's stateless answers must never stall its read
// loop, and a lost one is sent again when the peer tries again.
func (s *udpSocket) offer(p []byte, to netip.AddrPort) {
	b := getBuf()
	*b = append((*b)[:0], p...)
	pk := outPacket{b: *b, pooled: b, to: to, owner: &sendErr{}}
	s.mu.Lock()
	if s.closing || len(s.queue) >= maxQueue {
		s.mu.Unlock()
		pk.done()
		return
	}
	s.queue = append(s.queue, pk)
	if !s.flushing {
		s.flushing = true
		go s.flush()
	}
	s.mu.Unlock()
}

// retain takes one more reference to a received buffer, for a packet
// handed on while its receiver also releases it.
func (r *rxBuf) retain() { r.refs.Add(1) }

// isClosed reports whether c has been closed.
func (c *pconn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

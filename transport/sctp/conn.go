package sctp

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/braidhq/braid/transport/internal/preauth"
	"github.com/pion/transport/v5/deadline"
)

// assocConn is the net.Conn an association runs on (pconn or dconn): it
// reports malformed packets to its garbage hook and records signs of life.
type assocConn interface {
	net.Conn
	garbage() *garbageHook
	signs() *alive.Clock
	// setLinger sets the receive coalescing delay for the association's
	// packets, and handshakeRTT is what the SCTP handshake took, 0 if not
	// measured (coalesce.go).
	setLinger(d time.Duration)
	handshakeRTT() time.Duration
}

var (
	_ assocConn = (*pconn)(nil)
	_ assocConn = (*dconn)(nil)
)

// pconn is one association's view of a shared UDP socket: a net.Conn whose
// Read yields the packets the mux routed to it and whose Write queues them
// for the peer's address. pion/sctp runs on it.
type pconn struct {
	m     *mux
	raddr netip.AddrPort
	ua    *net.UDPAddr // raddr, for writes
	in    chan packet  // packets from the mux; full means drop (UDP)
	inB   atomic.Int64 // receive-buffer bytes the packets in in hold, at most maxQueued
	// sealed: the peer speaks DTLS (dtls.go), so packets are records that
	// pion/dtls checks, and not SCTP; set before the first packet.
	sealed bool
	// snap, for a plaintext peer, is what its association starts from
	// (init_cookie.go); set before the first packet.
	snap *snapInit
	// slot holds the association's place among the listener's handshakes
	// (mux.go) until it has authenticated or failed.
	slot *preauth.Slot
	hook garbageHook
	life alive.Clock
	rtt  rttClock
	serr sendErr
	tx   txRound
	rd   *deadline.Deadline
	// linger is the coalescing delay this association wants (setLinger),
	// -1 until it has one; the mux applies the smallest of its
	// associations' to the shared socket.
	linger atomic.Int64
	// borrowed: c's reader has the listener's socket (solo.go); granted
	// is where the mux's loop answers its borrow; local caches whether
	// the peer is on this host (0: not known yet, 1: no, 2: yes).
	borrowed atomic.Bool
	granted  chan bool
	local    atomic.Int32

	closeOnce sync.Once
	closed    chan struct{}
}

func newPconn(m *mux, raddr netip.AddrPort) *pconn {
	c := &pconn{m: m, raddr: raddr, ua: net.UDPAddrFromAddrPort(raddr), in: make(chan packet, 1024),
		rd: deadline.New(), closed: make(chan struct{})}
	c.hook.set(func(error) { _ = c.Close() })
	c.life.Start()
	c.linger.Store(-1)
	c.granted = make(chan bool, 1)
	return c
}

func (c *pconn) setLinger(d time.Duration) {
	if c.linger.Swap(int64(d)) != int64(d) {
		c.m.relinger()
	}
}

func (c *pconn) handshakeRTT() time.Duration { return c.rtt.get() }
func (c *pconn) garbage() *garbageHook       { return &c.hook }
func (c *pconn) signs() *alive.Clock         { return &c.life }

// maxQueued bounds the receive-buffer bytes held by one association's
// packets waiting for its reader (as the channel bounds their number). A
// peer that keeps to pion's receive window (8 MiB by default) never has
// more than that in flight.
const maxQueued = 16 << 20

// deliver hands a packet to the reader, dropping it when the queue is full.
func (c *pconn) deliver(p packet) {
	c.cookieAckAgain(p)
	n := int64(p.share())
	if c.inB.Add(n) > maxQueued {
		c.inB.Add(-n)
		p.rb.release()
		return
	}
	select {
	case c.in <- p:
	default:
		c.inB.Add(-n)
		p.rb.release()
	}
}

// cookieAckAgain answers a COOKIE ECHO from a plaintext peer that has
// not had our COOKIE-ACK.
func (c *pconn) cookieAckAgain(p packet) {
	if c.snap != nil && len(p.p) > sctpCommonHeader && p.p[sctpCommonHeader] == chunkCookieEcho {
		c.m.cookieAckAgain(c, p.p)
	}
}

// next returns c's next datagram, as it came: one the mux routed to c,
// or, while c is the listener's sole association, one c's reader read
// from the socket itself (solo.go). One goroutine at a time may call it.
func (c *pconn) next() (packet, error) {
	for {
		if c.borrowed.Load() {
			if pk, ok := c.queued(); ok {
				return pk, nil
			}
			if pk, err := c.readBorrowed(); !errors.Is(err, errGivenBack) {
				return pk, err
			}
		}
		if pk, ok := c.queued(); ok {
			return pk, nil
		}
		if c.borrow() {
			c.borrowed.Store(true)
			continue
		}
		select {
		case pk := <-c.in:
			return c.take(pk), nil
		case <-c.closed:
			return packet{}, net.ErrClosed
		case <-c.rd.Done():
			return packet{}, os.ErrDeadlineExceeded
		}
	}
}

// queued returns a datagram the mux routed to c, if one waits.
func (c *pconn) queued() (packet, bool) {
	select {
	case pk := <-c.in:
		return c.take(pk), true
	default:
		return packet{}, false
	}
}

// ready reports whether a datagram of c's is at hand for next; c's reader
// only.
func (c *pconn) ready() bool {
	return len(c.in) > 0 || (c.borrowed.Load() && c.readyBorrowed())
}

// take is the reader's side of deliver.
func (c *pconn) take(p packet) packet {
	c.inB.Add(-int64(p.share()))
	return p
}

// Read returns the next well-formed packet. A malformed one is reported to
// the hook (which aborts the association) and skipped.
func (c *pconn) Read(p []byte) (int, error) {
	for {
		pk, err := c.next()
		if err != nil {
			return 0, err
		}
		if q, ok := admit(pk, p, c.checks()); ok {
			return len(q), nil
		}
	}
}

// Write queues p for the peer (see batch.go), or holds it for Flush while
// the round is held (txRound.held).
func (c *pconn) Write(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	c.life.Sent()
	c.rtt.sent(p)
	if n, took, err := c.tx.write(c.m.sock, p, c.raddr, &c.serr, c.sealed); took {
		return n, err
	}
	return c.m.sock.write(p, c.raddr, &c.serr, c.sealed)
}

// checks is what admit checks c's packets with: nothing for DTLS records.
func (c *pconn) checks() *checker {
	if c.sealed {
		return nil
	}
	return &checker{hook: &c.hook, life: &c.life, rtt: &c.rtt} // inlined: no allocation
}

// WriteOwned is Write without the copy: p waits for Flush. pion's
// writeLoop uses both (the fork's optional ownedWriter, third_party/pion-sctp).
func (c *pconn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	return c.hold(outPacket{b: p, release: release, to: c.raddr, owner: &c.serr, gso: c.sealed})
}

// writePooled is WriteOwned for a buffer of getRecordBuf's, which goes back
// to its pool after the flush (no release func, no allocation).
func (c *pconn) writePooled(b *[]byte) (int, error) {
	return c.hold(outPacket{b: *b, pooled: b, to: c.raddr, owner: &c.serr, gso: c.sealed})
}

// hold adds pk to the round for Flush, or gives its buffer back.
func (c *pconn) hold(pk outPacket) (int, error) {
	select {
	case <-c.closed:
		pk.done()
		return 0, net.ErrClosed
	default:
	}
	if err := c.serr.get(); err != nil {
		pk.done()
		return 0, err
	}
	n := len(pk.b)
	c.rtt.sent(pk.b) // before pk is handed over
	if !c.tx.add(pk) {
		pk.done()
		return 0, net.ErrClosed
	}
	c.life.Sent()
	return n, nil
}

// Flush sends what WriteOwned holds.
func (c *pconn) Flush() error { return c.tx.flush(c.m.sock, &c.serr) }

// holdRound makes Write hold its packets for Flush too.
func (c *pconn) holdRound() { c.tx.held.Store(true) }

// ReadPacket is Read into a new buffer the caller owns; pion's readLoop
// uses it to save a copy.
func (c *pconn) ReadPacket() ([]byte, error) {
	for {
		pk, err := c.next()
		if err != nil {
			return nil, err
		}
		if p, ok := admit(pk, nil, c.checks()); ok {
			return p, nil
		}
	}
}

// checker is where admit reports a received SCTP packet: a malformed one
// to hook, a well-formed one as a sign of life.
type checker struct {
	hook *garbageHook
	life *alive.Clock
	rtt  *rttClock
}

// admit checks a received packet and releases its buffer. A well-formed
// one is copied into dst (truncated to it), or into a new slice when dst
// is nil, and counts as a sign of life; a malformed one is reported to
// the hook, which aborts the association. With a nil checker (a DTLS
// record, which pion/dtls checks) the packet is copied as it is.
func admit(pk packet, dst []byte, ck *checker) ([]byte, bool) {
	var err error
	if ck != nil {
		err = checkPacket(pk.p)
	}
	var p []byte
	switch {
	case err != nil:
	case dst == nil:
		p = append([]byte(nil), pk.p...)
	default:
		p = dst[:copy(dst, pk.p)]
	}
	pk.rb.release()
	if err != nil {
		ck.hook.fire(err)
		return nil, false
	}
	if ck != nil {
		ck.life.Heard()
		ck.rtt.got(p)
	}
	return p, true
}

// Close sends what WriteOwned holds and detaches the conn from the mux;
// the socket stays with the mux.
func (c *pconn) Close() error {
	c.closeOnce.Do(func() {
		_ = c.tx.close(c.m.sock, &c.serr)
		close(c.closed)
		c.closeBorrowed()
		c.m.remove(c)
	})
	return nil
}

func (c *pconn) LocalAddr() net.Addr           { return c.m.sock.localAddr() }
func (c *pconn) RemoteAddr() net.Addr          { return c.ua }
func (c *pconn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }
func (c *pconn) SetReadDeadline(t time.Time) error {
	c.rd.Set(t)
	c.setBorrowedDeadline()
	return nil
}
func (c *pconn) SetWriteDeadline(time.Time) error { return nil }

// dconn is the dialer's connected UDP socket, read and written in batches
// (batch.go), with the same packet check.
type dconn struct {
	sealed bool // packets are DTLS records (see pconn.sealed)
	// dropHelloVerify is set once the dialer has the listener's DTLS
	// cookie: later HelloVerifyRequests answer probes it sent again, and
	// would confuse pion's client (dtls_cookie.go).
	dropHelloVerify atomic.Bool
	sock            *udpSocket
	hook            garbageHook
	life            alive.Clock
	rtt             rttClock
	serr            sendErr
	tx              txRound
}

// newDconn takes uc's socket over (uc is closed: see quietFD).
func newDconn(uc *net.UDPConn) (*dconn, error) {
	sock, err := newUDPSocket(uc, true)
	if err != nil {
		return nil, err
	}
	c := &dconn{sock: sock}
	c.life.Start()
	return c, nil
}

// Write queues p for the peer, or holds it for Flush (see pconn.Write).
func (c *dconn) Write(p []byte) (int, error) {
	c.life.Sent()
	c.rtt.sent(p)
	if n, took, err := c.tx.write(c.sock, p, netip.AddrPort{}, &c.serr, c.sealed); took {
		return n, err
	}
	return c.sock.write(p, netip.AddrPort{}, &c.serr, c.sealed)
}

// Close sends what is held and queued (the queue for a bounded time) and
// closes the socket.
func (c *dconn) Close() error {
	_ = c.tx.close(c.sock, &c.serr)
	return c.sock.close()
}

// SetDeadline sets the read deadline only: writes are queued, and the
// flusher's sends must not fail on a deadline pion set for its own Write
// (Abort bounds its flush that way). close bounds the flusher instead.
func (c *dconn) SetDeadline(t time.Time) error     { return c.sock.setReadDeadline(t) }
func (c *dconn) SetReadDeadline(t time.Time) error { return c.sock.setReadDeadline(t) }
func (c *dconn) SetWriteDeadline(time.Time) error  { return nil }
func (c *dconn) LocalAddr() net.Addr               { return c.sock.localAddr() }
func (c *dconn) RemoteAddr() net.Addr              { return c.sock.q.raddr }

// WriteOwned is Write without the copy: p waits for Flush (see
// pconn.WriteOwned).
func (c *dconn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	return c.hold(outPacket{b: p, release: release, owner: &c.serr, gso: c.sealed})
}

// writePooled is WriteOwned for a buffer of getRecordBuf's (see
// pconn.writePooled).
func (c *dconn) writePooled(b *[]byte) (int, error) {
	return c.hold(outPacket{b: *b, pooled: b, owner: &c.serr, gso: c.sealed})
}

// hold adds pk to the round for Flush, or gives its buffer back.
func (c *dconn) hold(pk outPacket) (int, error) {
	if err := c.serr.get(); err != nil {
		pk.done()
		return 0, err
	}
	n := len(pk.b)
	c.rtt.sent(pk.b) // before pk is handed over
	if !c.tx.add(pk) {
		pk.done()
		return 0, net.ErrClosed
	}
	c.life.Sent()
	return n, nil
}

// Flush sends what WriteOwned holds.
func (c *dconn) Flush() error { return c.tx.flush(c.sock, &c.serr) }

// holdRound makes Write hold its packets for Flush too.
func (c *dconn) holdRound() { c.tx.held.Store(true) }

// ReadPacket is Read into a new buffer the caller owns (see
// pconn.ReadPacket).
func (c *dconn) ReadPacket() ([]byte, error) {
	for {
		pk, err := c.sock.rd.next()
		if err != nil {
			return nil, err
		}
		if c.staleHello(pk) {
			continue
		}
		if p, ok := admit(pk, nil, c.checks()); ok {
			return p, nil
		}
	}
}

// staleHello drops pk, and reports so, if it is a HelloVerifyRequest that
// came after the dialer had its cookie.
func (c *dconn) staleHello(pk packet) bool {
	if c.sealed && c.dropHelloVerify.Load() && isHelloVerify(pk.p) {
		pk.rb.release()
		return true
	}
	return false
}

// next returns the next datagram, as it came, less stale HelloVerifyRequests.
func (c *dconn) next() (packet, error) {
	for {
		pk, err := c.sock.rd.next()
		if err != nil || !c.staleHello(pk) {
			return pk, err
		}
	}
}

// ready reports whether next has a datagram at hand.
func (c *dconn) ready() bool { return c.sock.rd.ready() }

// checks is what admit checks c's packets with: nothing for DTLS records.
func (c *dconn) checks() *checker {
	if c.sealed {
		return nil
	}
	return &checker{hook: &c.hook, life: &c.life, rtt: &c.rtt} // inlined: no allocation
}

func (c *dconn) setLinger(d time.Duration)   { c.sock.linger.Store(int64(d)) }
func (c *dconn) handshakeRTT() time.Duration { return c.rtt.get() }

func (c *dconn) garbage() *garbageHook { return &c.hook }
func (c *dconn) signs() *alive.Clock   { return &c.life }

// Read returns the next well-formed packet; a malformed one is reported to
// the hook and skipped. Only pion's read loop calls it.
func (c *dconn) Read(p []byte) (int, error) {
	for {
		pk, err := c.sock.rd.next()
		if err != nil {
			return 0, err
		}
		if c.staleHello(pk) {
			continue
		}
		if q, ok := admit(pk, p, c.checks()); ok {
			return len(q), nil
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, maxDatagram+1); return &b }}

// recordPool's buffers take the copies a held round makes (txRound.write):
// DTLS records, at most 8 KiB (dtls.go), where bufPool's take a whole
// datagram.
var recordPool = sync.Pool{New: func() any { b := make([]byte, recordBufSize); return &b }}

const recordBufSize = 8192

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

// getRecordBuf returns a pooled buffer for n bytes, from recordPool if
// they fit.
func getRecordBuf(n int) *[]byte {
	if n <= recordBufSize {
		return recordPool.Get().(*[]byte)
	}
	return getBuf()
}

// putBuf gives b back to the pool it came from.
func putBuf(b *[]byte) {
	*b = (*b)[:cap(*b)]
	if cap(*b) == recordBufSize {
		recordPool.Put(b)
		return
	}
	bufPool.Put(b)
}

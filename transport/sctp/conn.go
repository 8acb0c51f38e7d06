package sctp

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/pion/transport/v5/deadline"
)

// assocConn is the net.Conn an association runs on (pconn or dconn): it
// reports malformed packets to its garbage hook and records signs of life.
type assocConn interface {
	net.Conn
	garbage() *garbageHook
	signs() *alive.Clock
}

var (
	_ assocConn = (*pconn)(nil)
	_ assocConn = (*dconn)(nil)
)

// pconn is one association's view of a shared UDP socket: a net.Conn whose
// Read yields the datagrams the mux routed to it and whose Write sends to
// the peer's address. pion/sctp runs on it.
type pconn struct {
	m     *mux
	raddr netip.AddrPort
	in    chan *[]byte // datagrams from the mux; full means drop (UDP)
	hook  garbageHook
	life  alive.Clock
	rd    *deadline.Deadline

	closeOnce sync.Once
	closed    chan struct{}
}

func newPconn(m *mux, raddr netip.AddrPort) *pconn {
	c := &pconn{m: m, raddr: raddr, in: make(chan *[]byte, 1024), rd: deadline.New(), closed: make(chan struct{})}
	c.hook.set(func(error) { _ = c.Close() })
	c.life.Start()
	return c
}

func (c *pconn) garbage() *garbageHook { return &c.hook }
func (c *pconn) signs() *alive.Clock   { return &c.life }

// deliver hands a datagram to the reader, dropping it when the queue is full.
func (c *pconn) deliver(b *[]byte) {
	select {
	case c.in <- b:
	default:
		putBuf(b)
	}
}

// Read returns the next well-formed datagram. A malformed one is reported to
// the hook (which aborts the association) and skipped.
func (c *pconn) Read(p []byte) (int, error) {
	for {
		select {
		case b := <-c.in:
			n := copy(p, *b)
			err := checkPacket(*b)
			putBuf(b)
			if err != nil {
				c.hook.fire(err)
				continue
			}
			c.life.Heard()
			return n, nil
		case <-c.closed:
			return 0, net.ErrClosed
		case <-c.rd.Done():
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (c *pconn) Write(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	c.life.Sent()
	return c.m.pc.WriteToUDPAddrPort(p, c.raddr)
}

// Close detaches the conn from the mux; the socket stays with the mux.
func (c *pconn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.m.remove(c)
	})
	return nil
}

func (c *pconn) LocalAddr() net.Addr               { return c.m.pc.LocalAddr() }
func (c *pconn) RemoteAddr() net.Addr              { return net.UDPAddrFromAddrPort(c.raddr) }
func (c *pconn) SetDeadline(t time.Time) error     { c.rd.Set(t); return nil }
func (c *pconn) SetReadDeadline(t time.Time) error { c.rd.Set(t); return nil }
func (c *pconn) SetWriteDeadline(time.Time) error  { return nil }

// dconn is the dialer's connected UDP socket with the same packet check.
type dconn struct {
	*net.UDPConn
	hook garbageHook
	life alive.Clock
}

func newDconn(uc *net.UDPConn) *dconn {
	c := &dconn{UDPConn: uc}
	c.life.Start()
	return c
}

func (c *dconn) Write(p []byte) (int, error) {
	c.life.Sent()
	return c.UDPConn.Write(p)
}

func (c *dconn) garbage() *garbageHook { return &c.hook }
func (c *dconn) signs() *alive.Clock   { return &c.life }

func (c *dconn) Read(p []byte) (int, error) {
	for {
		n, err := c.UDPConn.Read(p)
		if err != nil {
			return n, err
		}
		if err := checkPacket(p[:n]); err != nil {
			c.hook.fire(err)
			continue
		}
		c.life.Heard()
		return n, nil
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, maxDatagram+1); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	*b = (*b)[:cap(*b)]
	bufPool.Put(b)
}

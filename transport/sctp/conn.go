package sctp

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/pion/transport/v5/deadline"
)

// pconn is one association's view of a shared UDP socket: a net.Conn whose
// Read yields the datagrams the mux routed to it and whose Write sends to
// the peer's address. pion/sctp runs on it.
type pconn struct {
	m     *mux
	raddr netip.AddrPort
	in    chan *[]byte // datagrams from the mux; full means drop (UDP)
	hook  garbageHook
	rd    *deadline.Deadline

	closeOnce sync.Once
	closed    chan struct{}
}

func newPconn(m *mux, raddr netip.AddrPort) *pconn {
	c := &pconn{m: m, raddr: raddr, in: make(chan *[]byte, 1024), rd: deadline.New(), closed: make(chan struct{})}
	c.hook.set(func(error) { _ = c.Close() })
	return c
}

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
}

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
		return n, nil
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, maxDatagram+1); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	*b = (*b)[:cap(*b)]
	bufPool.Put(b)
}

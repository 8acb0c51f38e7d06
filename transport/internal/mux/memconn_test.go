package mux

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// memPair returns the two ends of an in-memory connection for tests in a
// testing/synctest bubble, where a goroutine blocked on a real socket would
// keep the fake clock from moving. Like a loopback TCP connection each
// direction buffers up to 64 KiB, so that a writer blocks while the peer
// does not read (flow control); it has deadlines, a half-close
// (CloseWrite: the peer reads EOF once it has read the rest) and a close
// that fails the peer's writes. Its waits are sync.Cond waits, which a
// bubble counts as durably blocked.
func memPair() (a, b *memConn) {
	ab, ba := newMemPipe(), newMemPipe()
	return &memConn{in: ba, out: ab}, &memConn{in: ab, out: ba}
}

const memPipeBytes = 64 << 10

// memPipe is one direction of a memPair.
type memPipe struct {
	mu      sync.Mutex // guards the fields below
	cond    sync.Cond  // broadcast on every change, and when a deadline passes
	buf     []byte
	wclosed bool // the writer half-closed or closed: EOF after buf
	rclosed bool // the reader closed: writes fail
	rdl     time.Time
	wdl     time.Time
}

func newMemPipe() *memPipe {
	p := &memPipe{}
	p.cond.L = &p.mu
	return p
}

// memConn is one end of a memPair.
type memConn struct {
	in, out *memPipe
	mu      sync.Mutex // guards closed
	closed  bool
}

var _ Conn = (*memConn)(nil)

func (c *memConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *memConn) Read(p []byte) (int, error) {
	in := c.in
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.buf) == 0 {
		switch {
		case c.isClosed():
			return 0, net.ErrClosed
		case in.wclosed:
			return 0, io.EOF
		case !in.rdl.IsZero() && !time.Now().Before(in.rdl):
			return 0, os.ErrDeadlineExceeded
		}
		in.cond.Wait()
	}
	n := copy(p, in.buf)
	in.buf = in.buf[n:]
	in.cond.Broadcast()
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	out := c.out
	out.mu.Lock()
	defer out.mu.Unlock()
	n := 0
	for n < len(p) {
		switch {
		case c.isClosed():
			return n, net.ErrClosed
		case out.wclosed || out.rclosed:
			return n, syscall.EPIPE
		case !out.wdl.IsZero() && !time.Now().Before(out.wdl):
			return n, os.ErrDeadlineExceeded
		}
		if room := memPipeBytes - len(out.buf); room > 0 {
			k := min(room, len(p)-n)
			out.buf = append(out.buf, p[n:n+k]...)
			n += k
			out.cond.Broadcast()
			continue
		}
		out.cond.Wait()
	}
	return n, nil
}

// CloseWrite half-closes: the peer reads EOF once it has read the rest.
func (c *memConn) CloseWrite() error {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	c.out.wclosed = true
	c.out.cond.Broadcast()
	return nil
}

func (c *memConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	for _, p := range []*memPipe{c.in, c.out} {
		p.mu.Lock()
		if p == c.in {
			p.rclosed = true
		} else {
			p.wclosed = true
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	return nil
}

func (c *memConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.in.setDeadline(&c.in.rdl, t)
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.out.setDeadline(&c.out.wdl, t)
	return nil
}

// setDeadline sets *dl to t and wakes p's waiters then, and now.
func (p *memPipe) setDeadline(dl *time.Time, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*dl = t
	p.cond.Broadcast()
	if !t.IsZero() {
		time.AfterFunc(time.Until(t), func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.cond.Broadcast()
		})
	}
}

func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

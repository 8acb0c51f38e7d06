package sctp

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// A listener's sole association reads the socket itself.
//
// The mux's read loop routes each batch of datagrams to its association's
// queue (pconn.in), from which the association's reader (pion's read loop)
// takes them: one goroutine hand-off a batch. Between hosts at WAN rates
// (some 400 batches a second at 100 Mbit/s) each costs the receiving
// process a thread's wakeup and search for work, about as much as reading
// the batch. So while a listener serves one association with a peer on
// another host, that association's reader borrows the socket's reader from
// the mux's loop (which waits meanwhile) and reads the socket itself,
// routing whatever is not its own as the mux would (a newcomer's
// handshake). It gives the reader back when the listener has another
// association, when its own conn closes or its read deadline passes (pion
// sets one to end its read loop), and when its socket fails.
//
// On loopback the mux's loop keeps the socket: there the two loops on two
// cores carry more than one.

// lender hands a mux's socket reader (udpSocket.rd, which one goroutine
// reads at a time) between the mux's read loop and an association's reader.
type lender struct {
	mu sync.Mutex // guards the fields below and the socket's read deadline
	// want is a reader that asked for the socket; the mux's loop answers
	// on its granted channel.
	want *pconn
	// holder is the reader that has the socket, nil while the mux's loop
	// has it; reading says whether the holder's reader is inside
	// readBorrowed, between enterBorrowed and giving the socket back or
	// leaveBorrowed. While it is, a closing conn wakes it and it gives the
	// socket back as it leaves; else the closing conn gives the socket
	// back itself, for the reader may never read again.
	holder  *pconn
	reading bool
	// done: the mux's loop has ended (the socket is closed); no one may
	// borrow.
	done bool
	back chan struct{} // the holder gives the socket back to the mux's loop
	// ownRead, nil but in tests, is called when the holder's reader has
	// read a packet of its own, before it leaves readBorrowed.
	ownRead func()
}

func newLender() *lender { return &lender{back: make(chan struct{}, 1)} }

// errGivenBack is how readBorrowed says that c no longer has the socket:
// its caller waits on c's queue instead.
var errGivenBack = errors.New("sctp: socket given back to the mux")

// lend answers a reader that asked for the socket (borrow) after the mux's
// loop read past the deadline borrow set: it hands the socket over and
// waits until it comes back. Only the mux's loop calls it.
func (m *mux) lend() {
	l := m.lender
	l.mu.Lock()
	c := l.want
	l.want = nil
	if c == nil || m.solo.Load() != c || c.isClosed() {
		_ = m.sock.setReadDeadline(time.Time{})
		l.mu.Unlock()
		if c != nil {
			c.granted <- false
		}
		return
	}
	l.holder, l.reading = c, false // until its reader enters readBorrowed
	t, _ := c.rd.Deadline()
	_ = m.sock.setReadDeadline(t)
	l.mu.Unlock()
	c.granted <- true
	<-l.back
}

// endLending refuses the socket to anyone who asks, once the mux's loop
// has ended.
func (m *mux) endLending() {
	l := m.lender
	l.mu.Lock()
	l.done = true
	c := l.want
	l.want = nil
	l.mu.Unlock()
	if c != nil {
		c.granted <- false
	}
}

// borrow asks the mux's loop for the socket and reports whether c has it.
// Only c's reader calls it, while c's queue is empty.
func (c *pconn) borrow() bool {
	m := c.m
	if m.solo.Load() != c || !c.remote() {
		return false
	}
	l := m.lender
	l.mu.Lock()
	if l.done || l.want != nil || l.holder != nil || c.isClosed() {
		l.mu.Unlock()
		return false
	}
	l.want = c
	_ = m.sock.setReadDeadline(pastDeadline) // ends the mux loop's wait
	l.mu.Unlock()
	return <-c.granted
}

// remote reports whether c's peer is on another host (see above).
func (c *pconn) remote() bool {
	if c.local.Load() == 0 {
		v := int32(1)
		if isLocal(c.ua) {
			v = 2
		}
		c.local.Store(v)
	}
	return c.local.Load() == 1
}

// readBorrowed returns c's next packet from the socket, which c has,
// routing others' packets. It gives the socket back and returns
// errGivenBack when the listener has another association, and gives it
// back with the error when c is closed, its read deadline has passed or
// the socket fails.
func (c *pconn) readBorrowed() (packet, error) {
	m := c.m
	if !c.enterBorrowed() {
		return packet{}, errGivenBack
	}
	for {
		switch {
		case c.isClosed():
			c.giveBack()
			return packet{}, net.ErrClosed
		case m.solo.Load() != c:
			c.giveBack()
			return packet{}, errGivenBack
		}
		p, err := m.sock.rd.next()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if c.deadlinePassed() {
				c.giveBack()
				return packet{}, err
			}
			c.setBorrowedDeadline() // a wakeup: closed, or a deadline moved
		case err != nil:
			c.giveBack()
			return packet{}, err
		case !p.from.IsValid():
			p.rb.release()
		case p.from == c.raddr:
			if m.lender.ownRead != nil {
				m.lender.ownRead()
			}
			c.leaveBorrowed()
			c.cookieAckAgain(p)
			return p, nil
		default:
			m.route(p.from, m.sock.compact(p))
		}
	}
}

// deadlinePassed reports whether c's read deadline has passed.
func (c *pconn) deadlinePassed() bool {
	t, ok := c.rd.Deadline()
	return ok && !t.IsZero() && !time.Now().Before(t)
}

// enterBorrowed marks c's reader as reading the socket, and reports
// whether c still has it (Close may have given it back meanwhile).
func (c *pconn) enterBorrowed() bool {
	l := c.m.lender
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != c {
		c.borrowed.Store(false)
		return false
	}
	l.reading = true
	return true
}

// leaveBorrowed marks c's reader as out of readBorrowed, holding the
// socket, or gives the socket back if c has closed meanwhile: Close, seeing
// the reader inside, left that to it, and the reader may not read again
// (pion's read loop ends on an ABORT it is about to return).
func (c *pconn) leaveBorrowed() {
	l := c.m.lender
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.holder != c:
	case c.isClosed():
		c.borrowed.Store(false)
		c.m.returnSocketLocked()
	default:
		l.reading = false
	}
}

// giveBack returns the socket to the mux's loop; c's reader only.
func (c *pconn) giveBack() {
	c.borrowed.Store(false)
	l := c.m.lender
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder == c {
		c.m.returnSocketLocked()
	}
}

// returnSocketLocked gives the socket back to the mux's loop with no
// deadline. The caller holds the lender's lock.
func (m *mux) returnSocketLocked() {
	m.lender.holder, m.lender.reading = nil, false
	_ = m.sock.setReadDeadline(time.Time{})
	m.lender.back <- struct{}{}
}

// setBorrowedDeadline applies c's read deadline to the socket while c
// has it; a closed c's wakes its reader.
func (c *pconn) setBorrowedDeadline() {
	l := c.m.lender
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != c {
		return
	}
	t, _ := c.rd.Deadline()
	if c.isClosed() {
		t = pastDeadline
	}
	_ = c.m.sock.setReadDeadline(t)
}

// closeBorrowed, as c closes (c.closed is closed already), wakes c's
// reader if it is inside readBorrowed, which then gives the socket back
// (its loop or leaveBorrowed sees c closed), or gives the socket back for
// it if it is not (pion's read loop may not read again).
func (c *pconn) closeBorrowed() {
	l := c.m.lender
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.holder != c:
	case l.reading:
		_ = c.m.sock.setReadDeadline(pastDeadline)
	default:
		c.m.returnSocketLocked()
	}
}

// readyBorrowed reports whether c has the socket and its reader holds a
// packet of c's at hand; c's reader only.
func (c *pconn) readyBorrowed() bool {
	l := c.m.lender
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holder != c { // Close gave it back
		return false
	}
	from, ok := c.m.sock.rd.peekFrom()
	return ok && from == c.raddr
}

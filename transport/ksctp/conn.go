package ksctp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// conn is one nonblocking SCTP socket parked on the runtime poller.
type conn struct {
	f  *os.File
	rc syscall.RawConn
	// wmu serialises sendmsg calls, so that a Send whose context ends can
	// interrupt its own write with a deadline without touching others.
	wmu sync.Mutex
}

func newConn(fd int, name string) (*conn, error) {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &conn{f: f, rc: rc}, nil
}

// control runs fn with the socket's descriptor.
func (c *conn) control(fn func(fd int) error) error {
	var err error
	if cerr := c.rc.Control(func(fd uintptr) { err = fn(int(fd)) }); cerr != nil {
		return cerr
	}
	return err
}

var aLongTimeAgo = time.Unix(1, 0)

// writeMsg sends p as one SCTP message on stream sid. It returns ctx.Err()
// if ctx ended before the kernel took the message.
func (c *conn) writeMsg(ctx context.Context, sid uint16, ppid uint32, flags uint16, p []byte) error {
	oob := sndInfoCmsg(sid, ppid, flags)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.f.SetWriteDeadline(aLongTimeAgo)
		close(fired)
	})
	var serr error
	err := c.rc.Write(func(fd uintptr) bool {
		_, serr = unix.SendmsgN(int(fd), p, oob, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	})
	if !stop() {
		<-fired
		c.f.SetWriteDeadline(time.Time{})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return ctx.Err()
		}
	}
	if err != nil {
		return err
	}
	return serr
}

// tryWriteMsg sends p as one SCTP message on stream sid if that needs no
// waiting: no other sendmsg under way and room in the socket buffer. It
// reports whether the kernel took the message.
func (c *conn) tryWriteMsg(sid uint16, ppid uint32, p []byte) bool {
	if !c.wmu.TryLock() {
		return false
	}
	defer c.wmu.Unlock()
	oob := sndInfoCmsg(sid, ppid, 0)
	err := c.control(func(fd int) error {
		_, err := unix.SendmsgN(fd, p, oob, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
		return err
	})
	return err == nil
}

// piece is what one recvmsg returned.
type piece struct {
	n     int
	eor   bool
	notif bool
	info  rcvInfo
	hasRI bool
}

// readPiece reads the next piece of an SCTP message (or notification) into
// buf. It returns errPeerEOF when the peer shut the association down.
func (c *conn) readPiece(buf, oob []byte) (piece, error) {
	var pc piece
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		var n, oobn, flags int
		n, oobn, flags, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT)
		if rerr == unix.EAGAIN {
			return false
		}
		if rerr == nil {
			pc.n, pc.eor, pc.notif = n, flags&unix.MSG_EOR != 0, flags&msgNotification != 0
			pc.info, pc.hasRI = parseRcvInfo(oob[:oobn])
		}
		return true
	})
	if err == nil {
		err = rerr
	}
	if err == nil && pc.n == 0 && !pc.notif {
		err = errPeerEOF
	}
	return pc, err
}

var errPeerEOF = fmt.Errorf("%w: shutdown", transport.ErrPeerClosed)

// mapErr turns socket errors into the transport's sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, transport.ErrPeerClosed):
		return err
	case errors.Is(err, unix.ECONNRESET), errors.Is(err, unix.EPIPE),
		errors.Is(err, unix.ENOTCONN), errors.Is(err, unix.ETIMEDOUT):
		return fmt.Errorf("%w: %v", transport.ErrPeerClosed, err)
	case errors.Is(err, os.ErrClosed):
		return transport.ErrClosed
	}
	return err
}

// hsConn runs the braid handshake over the control stream of a fresh
// conn, before the receive loop starts. SCTP orders messages per stream
// only, so the peer's first credit grants and data, sent once its side of
// the handshake is done, may overtake its last handshake message; ReadMsg
// sets such pieces aside (up to maxEarly bytes) for the receive loop.
type hsConn struct {
	c     *conn
	early []earlyPiece
	size  int // bytes in early
}

// earlyPiece is a piece read during the handshake, for the receive loop.
type earlyPiece struct {
	info rcvInfo
	eor  bool
	b    []byte
}

// maxEarly bounds what a peer may send ahead of the handshake's end.
const maxEarly = 1 << 20

func (h *hsConn) WriteMsg(p []byte) error {
	return mapErr(h.c.writeMsg(context.Background(), sctpwire.ControlStream, sctpwire.PPID, 0, p))
}

func (h *hsConn) ReadMsg() ([]byte, error) {
	buf := make([]byte, sctpwire.MaxSCTPMessage)
	oob := make([]byte, 256)
	for {
		pc, err := h.c.readPiece(buf, oob)
		if err != nil {
			return nil, mapErr(err)
		}
		switch {
		case pc.notif:
			continue
		case !pc.hasRI:
			return nil, fmt.Errorf("%w: message without SCTP_RCVINFO", transport.ErrProtocol)
		case pc.info.SID != sctpwire.ControlStream:
			if err := h.setAside(pc, buf); err != nil {
				return nil, err
			}
			continue
		case !pc.eor || pc.n > transport.MaxHandshakeMessage:
			return nil, fmt.Errorf("%w: handshake message too long", transport.ErrProtocol)
		case pc.info.PPID != sctpwire.PPID:
			return nil, fmt.Errorf("%w: not a handshake message (payload protocol id %d)", transport.ErrProtocol, pc.info.PPID)
		}
		return append([]byte(nil), buf[:pc.n]...), nil
	}
}

func (h *hsConn) setAside(pc piece, buf []byte) error {
	h.size += pc.n
	if h.size > maxEarly {
		return fmt.Errorf("%w: over %d bytes of data before the handshake ended", transport.ErrProtocol, maxEarly)
	}
	h.early = append(h.early, earlyPiece{info: pc.info, eor: pc.eor, b: append([]byte(nil), buf[:pc.n]...)})
	return nil
}

// deadlineFor makes ctx's end interrupt all I/O on c until the returned
// func is called.
func (c *conn) deadlineFor(ctx context.Context) (undo func()) {
	if d, ok := ctx.Deadline(); ok {
		c.f.SetDeadline(d)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.f.SetDeadline(aLongTimeAgo)
		close(fired)
	})
	return func() {
		if !stop() {
			<-fired
		}
		c.f.SetDeadline(time.Time{})
	}
}

//go:build unix

package tcpconn

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// peekByte returns the first byte waiting on c without taking it from the
// socket (MSG_PEEK), honouring c's read deadline: what follows reads c
// itself, so a plaintext association keeps the *net.TCPConn (and its
// writev) and TLS reads the byte again.
func peekByte(c *net.TCPConn) (byte, Conn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, nil, err
	}
	var b [1]byte
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		return !errors.Is(rerr, syscall.EAGAIN) && !errors.Is(rerr, syscall.EINTR)
	})
	switch {
	case err != nil:
		return 0, nil, err
	case rerr != nil:
		return 0, nil, rerr
	case n == 0:
		return 0, nil, io.EOF
	}
	return b[0], c, nil
}

// hasData reports whether bytes are waiting on c already, without
// waiting for any.
func hasData(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	n := 0
	_ = rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}

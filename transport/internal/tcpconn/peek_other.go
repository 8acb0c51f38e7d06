//go:build !unix

package tcpconn

import (
	"io"
	"net"
)

// peekByte reads c's first byte and returns a connection that gives it
// back (no MSG_PEEK here).
func peekByte(c *net.TCPConn) (byte, net.Conn, error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, nil, err
	}
	return b[0], &prefixConn{Conn: c, tcp: c, first: b[:]}, nil
}

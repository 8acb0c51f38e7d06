//go:build !unix

package tcpconn

import (
	"io"
	"net"
)

// peekByte reads c's first byte and returns a connection that gives it
// back (no MSG_PEEK here).
func peekByte(c *net.TCPConn) (byte, Conn, error) {
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return 0, nil, err
	}
	return b[0], &prefixConn{Conn: c, tcp: c, first: b[:]}, nil
}

// prefixConn gives back the byte peekByte read before the rest. It embeds
// the net.Conn interface, not the *net.TCPConn, so that no ReadFrom or
// WriteTo of the socket can skip the byte.
type prefixConn struct {
	net.Conn
	tcp   *net.TCPConn
	first []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.first) > 0 {
		n := copy(b, p.first)
		p.first = p.first[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

func (p *prefixConn) CloseWrite() error { return p.tcp.CloseWrite() }

// hasData reports whether bytes are waiting on c; without MSG_PEEK it
// cannot tell, and says no.
func hasData(*net.TCPConn) bool { return false }

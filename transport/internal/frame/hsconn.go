package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/braidhq/braid/transport"
)

// HandshakeConn carries handshake messages over a connection, each prefixed
// by its length as two big-endian bytes. It implements
// transport.HandshakeConn. It reads the connection byte-exactly (no
// buffering), so that the frames after the handshake stay in the socket.
type HandshakeConn struct {
	C net.Conn
}

var _ transport.HandshakeConn = HandshakeConn{}

// WriteMsg writes one length-prefixed message.
func (h HandshakeConn) WriteMsg(p []byte) error {
	if len(p) > transport.MaxHandshakeMessage {
		return fmt.Errorf("%w: handshake message of %d bytes", transport.ErrProtocol, len(p))
	}
	b := make([]byte, 2, 2+len(p))
	binary.BigEndian.PutUint16(b, uint16(len(p)))
	_, err := h.C.Write(append(b, p...))
	return err
}

// ReadMsg reads one length-prefixed message into a new slice. A closed
// connection yields an error wrapping transport.ErrPeerClosed.
func (h HandshakeConn) ReadMsg() ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(h.C, n[:]); err != nil {
		return nil, peerClosed(err)
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > transport.MaxHandshakeMessage {
		return nil, fmt.Errorf("%w: handshake message of %d bytes", transport.ErrProtocol, size)
	}
	p := make([]byte, size)
	if _, err := io.ReadFull(h.C, p); err != nil {
		return nil, peerClosed(err)
	}
	return p, nil
}

// peerClosed marks end-of-stream and resets as the peer having closed.
func peerClosed(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
		return fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
	}
	return err
}

func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && !oe.Timeout()
}

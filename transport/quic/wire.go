package quic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/braidhq/braid/transport"
)

// hsConn carries handshake messages on the control stream, each prefixed by
// its length as two big-endian bytes.
type hsConn struct {
	rw io.ReadWriter
}

var _ transport.HandshakeConn = hsConn{}

func (h hsConn) WriteMsg(p []byte) error {
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(p)), uint16(len(p)))
	_, err := h.rw.Write(append(b, p...))
	return peerErr(err)
}

func (h hsConn) ReadMsg() ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(h.rw, n[:]); err != nil {
		return nil, peerErr(err)
	}
	size := int(binary.BigEndian.Uint16(n[:]))
	if size > transport.MaxHandshakeMessage {
		return nil, fmt.Errorf("%w: handshake message of %d bytes", transport.ErrProtocol, size)
	}
	p := make([]byte, size)
	if _, err := io.ReadFull(h.rw, p); err != nil {
		return nil, peerErr(err)
	}
	return p, nil
}

// peerErr wraps a stream error as the peer having gone.
func peerErr(err error) error {
	if err == nil || errors.Is(err, transport.ErrPeerClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
}

// lenPrefix is the size of a message's length prefix on a data stream.
const lenPrefix = 4

// readLen reads a message length and checks it.
func readLen(r io.Reader) (int, error) {
	var b [lenPrefix]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	n := binary.BigEndian.Uint32(b[:])
	if n > transport.MaxMessageSize {
		return 0, fmt.Errorf("%w: peer announced a message of %d bytes", transport.ErrProtocol, n)
	}
	return int(n), nil
}

// writeMessage writes p's length and p; small messages go in one write.
func writeMessage(w io.Writer, p []byte) (int, error) {
	if len(p) <= 32<<10 {
		b := binary.BigEndian.AppendUint32(make([]byte, 0, lenPrefix+len(p)), uint32(len(p)))
		return w.Write(append(b, p...))
	}
	var h [lenPrefix]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(p)))
	n, err := w.Write(h[:])
	if err != nil {
		return n, err
	}
	m, err := w.Write(p)
	return n + m, err
}

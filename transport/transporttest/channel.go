package transporttest

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/braidhq/braid/transport"
)

// PrefixConn frames handshake messages on rw with a two-byte big-endian
// length, as tcp, tcpn and quic do on their first channel; Options.Channel
// hooks may return it.
func PrefixConn(rw io.ReadWriter) transport.HandshakeConn { return prefixConn{rw} }

type prefixConn struct{ rw io.ReadWriter }

func (c prefixConn) WriteMsg(p []byte) error {
	_, err := c.rw.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(p))), p...))
	return err
}

func (c prefixConn) ReadMsg() ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(c.rw, n[:]); err != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
	}
	if size := binary.BigEndian.Uint16(n[:]); size > transport.MaxHandshakeMessage {
		return nil, fmt.Errorf("%w: handshake message of %d bytes", transport.ErrProtocol, size)
	}
	p := make([]byte, binary.BigEndian.Uint16(n[:]))
	if _, err := io.ReadFull(c.rw, p); err != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrPeerClosed, err)
	}
	return p, nil
}

// forgeAuth passes a dialer's handshake through, but flips a bit of the
// MAC in its third message (auth), as a peer without the secret would
// have to guess it.
type forgeAuth struct {
	transport.HandshakeConn
	writes int
}

func (f *forgeAuth) WriteMsg(p []byte) error {
	if f.writes++; f.writes == 2 {
		p = append([]byte(nil), p...)
		p[len(p)-1] ^= 1
	}
	return f.HandshakeConn.WriteMsg(p)
}

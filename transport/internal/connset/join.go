// Package connset gathers an association's TCP connections: the first one
// runs the braid handshake, and the dialer then opens the others, each
// joining the association with proof that it comes from the same peer.
// tcpn opens one connection per stream this way, ptcp one per stripe.
//
// The messages, each length-prefixed like handshake messages:
//
//	listener -> dialer (first connection)  token {magic "BRDT", token}
//	dialer -> listener (extra connection)  join  {magic "BRDJ", token, index u16, HMAC(secret, label || token || index)}
//	listener -> dialer (extra connection)  ack   {magic "BRDA"}
//
// The label names the transport ("braid tcpn join"), so that a join made
// for one transport is no good for another.
package connset

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

const (
	tokenLen   = 16
	tokenMagic = "BRDT"
	joinMagic  = "BRDJ"
	ackMagic   = "BRDA"
	joinLen    = len(joinMagic) + tokenLen + 2 + sha256.Size
)

// assocToken names an association whose connections are being gathered.
type assocToken [tokenLen]byte

func appendToken(b []byte, token assocToken) []byte {
	return append(append(b, tokenMagic...), token[:]...)
}

// readToken reads the association's token on the dialer's first
// connection.
func readToken(hc frame.HandshakeConn) (assocToken, error) {
	var token assocToken
	p, err := hc.ReadMsg()
	if err != nil {
		return token, fmt.Errorf("read association token: %w", err)
	}
	if len(p) != len(tokenMagic)+tokenLen || string(p[:len(tokenMagic)]) != tokenMagic {
		return token, fmt.Errorf("%w: bad association token message", transport.ErrProtocol)
	}
	copy(token[:], p[len(tokenMagic):])
	return token, nil
}

func joinMAC(label string, secret []byte, token assocToken, i uint16) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(label))
	h.Write(token[:])
	h.Write(binary.BigEndian.AppendUint16(nil, i))
	return h.Sum(nil)
}

func appendJoin(b []byte, label string, secret []byte, token assocToken, i int) []byte {
	b = append(append(b, joinMagic...), token[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(i))
	return append(b, joinMAC(label, secret, token, uint16(i))...)
}

// IsJoin tells a join from a handshake hello.
func IsJoin(p []byte) bool {
	return bytes.HasPrefix(p, []byte(joinMagic))
}

// parseJoin decodes a join message and checks its MAC.
func parseJoin(p []byte, label string, secret []byte) (token assocToken, index int, err error) {
	if len(p) != joinLen || !IsJoin(p) {
		return token, 0, fmt.Errorf("%w: malformed join message", transport.ErrProtocol)
	}
	p = p[len(joinMagic):]
	copy(token[:], p)
	i := binary.BigEndian.Uint16(p[tokenLen:])
	if !hmac.Equal(p[tokenLen+2:], joinMAC(label, secret, token, i)) {
		return token, 0, fmt.Errorf("%w: join message for stream %d has a bad MAC", transport.ErrAuth, i)
	}
	return token, int(i), nil
}

// readAck reads the listener's ack of a join.
func readAck(hc frame.HandshakeConn) error {
	p, err := hc.ReadMsg()
	if err != nil {
		return fmt.Errorf("read join ack: %w", err)
	}
	if string(p) != ackMagic {
		return fmt.Errorf("%w: bad join ack", transport.ErrProtocol)
	}
	return nil
}

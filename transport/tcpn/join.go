package tcpn

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// The messages that join a stream's connection to an association, each
// length-prefixed like handshake messages:
//
//	listener -> dialer (first connection)  token {magic "BRDT", token}
//	dialer -> listener (extra connection)  join  {magic "BRDJ", token, index u16, HMAC(secret, label || token || index)}
//	listener -> dialer (extra connection)  ack   {magic "BRDA"}
const (
	tokenLen   = 16
	tokenMagic = "BRDT"
	joinMagic  = "BRDJ"
	ackMagic   = "BRDA"
	joinLabel  = "braid tcpn join"
	joinLen    = len(joinMagic) + tokenLen + 2 + sha256.Size
)

func appendToken(b []byte, token [tokenLen]byte) []byte {
	return append(append(b, tokenMagic...), token[:]...)
}

func readToken(hc frame.HandshakeConn) ([tokenLen]byte, error) {
	var token [tokenLen]byte
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

func joinMAC(secret []byte, token [tokenLen]byte, i uint16) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(joinLabel))
	h.Write(token[:])
	h.Write(binary.BigEndian.AppendUint16(nil, i))
	return h.Sum(nil)
}

func appendJoin(b, secret []byte, token [tokenLen]byte, i int) []byte {
	b = append(append(b, joinMagic...), token[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(i))
	return append(b, joinMAC(secret, token, uint16(i))...)
}

// isJoin tells a join from a handshake hello.
func isJoin(p []byte) bool {
	return bytes.HasPrefix(p, []byte(joinMagic))
}

// parseJoin decodes a join message and checks its MAC.
func parseJoin(p, secret []byte) (token [tokenLen]byte, index int, err error) {
	if len(p) != joinLen || !isJoin(p) {
		return token, 0, fmt.Errorf("%w: malformed join message", transport.ErrProtocol)
	}
	p = p[len(joinMagic):]
	copy(token[:], p)
	i := binary.BigEndian.Uint16(p[tokenLen:])
	if !hmac.Equal(p[tokenLen+2:], joinMAC(secret, token, i)) {
		return token, 0, fmt.Errorf("%w: join message for stream %d has a bad MAC", transport.ErrAuth, i)
	}
	return token, int(i), nil
}

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

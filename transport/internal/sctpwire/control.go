package sctpwire

import (
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
)

// A control message is one SCTP message on the control stream after the
// handshake. Its first byte is its type:
//
//	CtlCredit: type u8 | stream u16 | limit u64
//	CtlPing:   type u8
//
// A credit grant raises the sender's limit on logical stream `stream` to
// limit (cumulative cost, see the package comment); limits only grow and a
// stale one is ignored. A ping asks for nothing.
const (
	CtlCredit byte = 1
	CtlPing   byte = 2

	CreditLen = 11
	PingLen   = 1
)

// Control is a decoded control message.
type Control struct {
	Type   byte
	Stream int    // CtlCredit: the logical stream
	Limit  uint64 // CtlCredit: the new limit
}

// AppendCredit appends a credit grant for logical stream s.
func AppendCredit(b []byte, s int, limit uint64) []byte {
	b = append(b, CtlCredit)
	b = binary.BigEndian.AppendUint16(b, uint16(s))
	return binary.BigEndian.AppendUint64(b, limit)
}

// AppendPing appends a ping.
func AppendPing(b []byte) []byte { return append(b, CtlPing) }

// ParseControl decodes a control message; streams is the negotiated count.
// Errors wrap transport.ErrProtocol.
func ParseControl(p []byte, streams int) (Control, error) {
	if len(p) == 0 {
		return Control{}, fmt.Errorf("%w: empty control message", transport.ErrProtocol)
	}
	switch c := (Control{Type: p[0]}); {
	case c.Type == CtlPing && len(p) == PingLen:
		return c, nil
	case c.Type == CtlCredit && len(p) == CreditLen:
		c.Stream = int(binary.BigEndian.Uint16(p[1:]))
		if c.Stream >= streams {
			return Control{}, fmt.Errorf("%w: credit for stream %d of %d", transport.ErrProtocol, c.Stream, streams)
		}
		c.Limit = binary.BigEndian.Uint64(p[3:])
		return c, nil
	}
	return Control{}, fmt.Errorf("%w: bad control message (type %d, %d bytes)", transport.ErrProtocol, p[0], len(p))
}

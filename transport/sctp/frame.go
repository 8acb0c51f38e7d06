package sctp

import (
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
)

// A data fragment is one SCTP message on a data stream:
//
//	flags u8 | msgID u32 | offset u32 | total u32 | payload
//
// total is the whole message's length, the same in every fragment; offset is
// where payload goes. The fragment with flagLast ends the message; one with
// flagAbandon (no payload) tells the receiver to drop the partial message
// (its sender gave up mid-message).
const (
	fragHeaderLen = 13

	flagLast    byte = 1
	flagAbandon byte = 2
)

// fragHeader is a decoded fragment header.
type fragHeader struct {
	flags  byte
	msgID  uint32
	offset uint32
	total  uint32
}

// appendFragHeader appends h's wire form to b.
func appendFragHeader(b []byte, h fragHeader) []byte {
	b = append(b, h.flags)
	b = binary.BigEndian.AppendUint32(b, h.msgID)
	b = binary.BigEndian.AppendUint32(b, h.offset)
	return binary.BigEndian.AppendUint32(b, h.total)
}

// parseFragment splits a fragment into header and payload and checks that it
// is self-consistent and within maxFrag and the transport's message limit.
func parseFragment(p []byte, maxFrag int) (fragHeader, []byte, error) {
	var h fragHeader
	if len(p) < fragHeaderLen {
		return h, nil, fmt.Errorf("%w: fragment of %d bytes is shorter than its header", transport.ErrProtocol, len(p))
	}
	h.flags = p[0]
	h.msgID = binary.BigEndian.Uint32(p[1:])
	h.offset = binary.BigEndian.Uint32(p[5:])
	h.total = binary.BigEndian.Uint32(p[9:])
	body := p[fragHeaderLen:]
	switch {
	case h.flags&^(flagLast|flagAbandon) != 0:
		return h, nil, fmt.Errorf("%w: unknown fragment flags %#x", transport.ErrProtocol, h.flags)
	case len(body) > maxFrag:
		return h, nil, fmt.Errorf("%w: oversize fragment (%d > %d bytes)", transport.ErrProtocol, len(body), maxFrag)
	case h.total > transport.MaxMessageSize:
		return h, nil, fmt.Errorf("%w: message of %d bytes", transport.ErrMessageTooLarge, h.total)
	case uint64(h.offset)+uint64(len(body)) > uint64(h.total):
		return h, nil, fmt.Errorf("%w: fragment [%d,+%d) past message end %d", transport.ErrProtocol, h.offset, len(body), h.total)
	case h.flags&flagLast != 0 && int(h.offset)+len(body) != int(h.total):
		return h, nil, fmt.Errorf("%w: last fragment ends at %d, message has %d bytes", transport.ErrProtocol, int(h.offset)+len(body), h.total)
	case h.flags&flagAbandon != 0 && len(body) != 0:
		return h, nil, fmt.Errorf("%w: abandon fragment with payload", transport.ErrProtocol)
	}
	return h, body, nil
}

// A control message on stream 0 after the handshake:
//
//	type u8 | stream u16 | limit u64
//
// ctlCredit raises the sender's credit limit on a logical stream to limit
// (cumulative bytes, see flow.go). Limits only grow; a stale one is ignored.
const (
	ctlCredit    byte = 1
	ctlCreditLen int  = 11
)

// appendCredit appends a credit grant.
func appendCredit(b []byte, stream int, limit uint64) []byte {
	b = append(b, ctlCredit)
	b = binary.BigEndian.AppendUint16(b, uint16(stream))
	return binary.BigEndian.AppendUint64(b, limit)
}

// parseCredit decodes a credit grant; streams is the negotiated count.
func parseCredit(p []byte, streams int) (stream int, limit uint64, err error) {
	if len(p) != ctlCreditLen || p[0] != ctlCredit {
		return 0, 0, fmt.Errorf("%w: bad control message (%d bytes)", transport.ErrProtocol, len(p))
	}
	stream = int(binary.BigEndian.Uint16(p[1:]))
	if stream >= streams {
		return 0, 0, fmt.Errorf("%w: credit for stream %d of %d", transport.ErrProtocol, stream, streams)
	}
	return stream, binary.BigEndian.Uint64(p[3:]), nil
}

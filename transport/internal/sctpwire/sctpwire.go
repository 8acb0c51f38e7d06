// Package sctpwire is braid's framing on SCTP, shared by the userspace stack
// (transport/sctp, pion/sctp over UDP) and the kernel stack (transport/ksctp),
// so that either can talk to the other. It holds pure append/parse
// functions; each transport does its own I/O and flow-control bookkeeping by
// the rules written here.
//
// Layout of an association:
//
//   - Every SCTP message carries payload protocol identifier PPID.
//   - SCTP stream 0 (ControlStream) carries the braid handshake
//     (transport.DialHandshake / ListenHandshake), one handshake message per
//     SCTP message, and after it control messages: credit grants and pings.
//   - Logical stream i is SCTP stream DataStream(i) = i+1, ordered and
//     reliable. Each SCTP message on it is one fragment: a FragHeaderLen-byte
//     header and up to MaxFragment bytes of payload. An empty braid message
//     is one fragment with no payload.
//
// Flow control is credit per logical stream, counted in "cost": the bytes
// of every fragment put on the stream, header included (abandon fragments
// cost nothing). A sender starts with InitialCredit and may put a fragment
// on the stream only while its total cost stays within the latest limit the
// receiver granted; a receiver that sees more aborts the association. A
// grant carries a cumulative limit, so grants are idempotent and a stale
// one is ignored. The receiver raises the limit as its application consumes
// messages, and also releases the fragments of a message still being
// reassembled while it holds no finished message, so that one message
// larger than any window can always complete.
//
// Pings keep braid's own liveness clock going: an endpoint that has sent
// nothing for a while sends one; the receiver only notes that it arrived.
// The kernel stack needs them because the kernel answers SCTP heartbeats
// for a process that is frozen; the userspace stack sends them for the same
// reason and because the kernel aborts on pion's malformed heartbeats.
package sctpwire

import (
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
)

// PPID is the payload protocol identifier on every braid SCTP message
// (53, "WebRTC Binary", what pion/sctp uses for binary messages).
const PPID = 53

// ControlStream is the SCTP stream of the handshake and control messages.
const ControlStream = 0

// DataStream is the SCTP stream that carries logical stream i.
func DataStream(i int) uint16 { return uint16(i + 1) }

// Protocol constants; they are not negotiated.
const (
	// MaxFragment is the largest fragment payload a receiver accepts.
	MaxFragment = 64 << 10
	// MaxSCTPMessage is the largest SCTP message either side sends.
	MaxSCTPMessage = FragHeaderLen + MaxFragment
	// InitialCredit is the limit a sender starts with on every stream,
	// before the receiver's first grant.
	InitialCredit = 256 << 10
)

// A data fragment is one SCTP message on a data stream:
//
//	flags u8 | msgID u32 | offset u32 | total u32 | payload
//
// total is the whole message's length, the same in every fragment; offset
// is where payload goes, and fragments come in order. msgID numbers a
// stream's messages (the sender counts up from any value). The fragment
// with FlagLast ends the message; one with FlagAbandon (no payload, no
// credit) tells the receiver to drop the partial message msgID, whose
// sender gave up mid-message; it comes before the stream's next message.
const (
	FragHeaderLen = 13

	FlagLast    byte = 1
	FlagAbandon byte = 2
)

// FragHeader is a decoded fragment header.
type FragHeader struct {
	Flags  byte
	MsgID  uint32
	Offset uint32
	Total  uint32
}

// AppendFragHeader appends h's wire form to b.
func AppendFragHeader(b []byte, h FragHeader) []byte {
	b = append(b, h.Flags)
	b = binary.BigEndian.AppendUint32(b, h.MsgID)
	b = binary.BigEndian.AppendUint32(b, h.Offset)
	return binary.BigEndian.AppendUint32(b, h.Total)
}

// ParseFragment splits a fragment into header and payload and checks that
// it is self-consistent and within maxFrag and the transport's message
// limit. Errors wrap transport.ErrProtocol or transport.ErrMessageTooLarge.
func ParseFragment(p []byte, maxFrag int) (FragHeader, []byte, error) {
	var h FragHeader
	if len(p) < FragHeaderLen {
		return h, nil, fmt.Errorf("%w: fragment of %d bytes is shorter than its header", transport.ErrProtocol, len(p))
	}
	h.Flags = p[0]
	h.MsgID = binary.BigEndian.Uint32(p[1:])
	h.Offset = binary.BigEndian.Uint32(p[5:])
	h.Total = binary.BigEndian.Uint32(p[9:])
	body := p[FragHeaderLen:]
	switch {
	case h.Flags&^(FlagLast|FlagAbandon) != 0:
		return h, nil, fmt.Errorf("%w: unknown fragment flags %#x", transport.ErrProtocol, h.Flags)
	case h.Flags == FlagLast|FlagAbandon:
		return h, nil, fmt.Errorf("%w: fragment both last and abandoned", transport.ErrProtocol)
	case len(body) > maxFrag:
		return h, nil, fmt.Errorf("%w: oversize fragment (%d > %d bytes)", transport.ErrProtocol, len(body), maxFrag)
	case h.Total > transport.MaxMessageSize:
		return h, nil, fmt.Errorf("%w: message of %d bytes", transport.ErrMessageTooLarge, h.Total)
	case uint64(h.Offset)+uint64(len(body)) > uint64(h.Total):
		return h, nil, fmt.Errorf("%w: fragment [%d,+%d) past message end %d", transport.ErrProtocol, h.Offset, len(body), h.Total)
	case h.Flags&FlagLast != 0 && int(h.Offset)+len(body) != int(h.Total):
		return h, nil, fmt.Errorf("%w: last fragment ends at %d, message has %d bytes", transport.ErrProtocol, int(h.Offset)+len(body), h.Total)
	case h.Flags&FlagAbandon != 0 && len(body) != 0:
		return h, nil, fmt.Errorf("%w: abandon fragment with payload", transport.ErrProtocol)
	}
	return h, body, nil
}

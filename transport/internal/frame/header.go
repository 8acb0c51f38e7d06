// Package frame is the wire format shared by braid's TCP transports: a
// 12-byte header, then the payload.
//
//	0      type     (Data, Block, Close, Abort, Ping)
//	1      flags    (FlagEnd on a message's last frame)
//	2..3   stream   big endian
//	4..7   length   of this frame's payload
//	8..11  msglen   total length of the message the frame belongs to
//	12..15 seq      Block frames only: the block's number in its stream
//
// A message over MaxPayload bytes is cut into frames, so that a sender can
// interleave other streams' frames between them. Close (no payload) says the
// sender will send nothing more; Abort carries a reason text. Ping (no
// payload, stream 0) is a keep-alive: a sign of life that a side sends when
// it has sent nothing else for a while, and that the receiver only notes.
// A ping with FlagIdle says the sender has gone idle: the receiver may
// wait the association's idle bound, not its liveness bound, for the next
// sign of life (a flag only sent to a peer that offered idle pings in the
// handshake; transport/internal/mux/liveness.go).
//
// Block is a Data frame for a striped association ("ptcp"), whose messages
// are cut into blocks spread over several connections: it carries four more
// header bytes, the block's sequence number in its stream (counting every
// block of every message, wrapping at 2^32), by which the receiver puts the
// blocks of a stream back in order.
package frame

import (
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
)

// Type is a frame's kind.
type Type uint8

// Frame types.
const (
	Data Type = iota
	Close
	Abort
	Ping
	Block
)

func (t Type) String() string {
	switch t {
	case Data:
		return "data"
	case Close:
		return "close"
	case Abort:
		return "abort"
	case Ping:
		return "ping"
	case Block:
		return "block"
	}
	return fmt.Sprintf("type %d", uint8(t))
}

// FlagEnd marks the last frame of a message.
const FlagEnd uint8 = 1

// FlagIdle marks a ping that announces the idle bound (see the package
// comment). It is the only flag a ping may carry.
const FlagIdle uint8 = 2

const (
	// HeaderLen is the size of an encoded header.
	HeaderLen = 12
	// BlockHeaderLen is the size of a Block frame's header, sequence
	// number included.
	BlockHeaderLen = HeaderLen + 4
	// MaxPayload is the largest payload of one frame.
	MaxPayload = 64 << 10
	// MaxReason bounds an Abort frame's reason.
	MaxReason = 1024
)

// Header is a decoded frame header.
type Header struct {
	Type   Type
	Flags  uint8
	Stream uint16
	Len    uint32
	MsgLen uint32
	Seq    uint32 // Block frames only
}

// Put encodes h into b, which must hold BlockHeaderLen bytes for a Block
// frame and HeaderLen for the others, and returns the encoding's length.
func (h Header) Put(b []byte) int {
	_ = b[HeaderLen-1]
	b[0], b[1] = byte(h.Type), h.Flags
	binary.BigEndian.PutUint16(b[2:], h.Stream)
	binary.BigEndian.PutUint32(b[4:], h.Len)
	binary.BigEndian.PutUint32(b[8:], h.MsgLen)
	if h.Type == Block {
		binary.BigEndian.PutUint32(b[HeaderLen:BlockHeaderLen], h.Seq)
		return BlockHeaderLen
	}
	return HeaderLen
}

// Append appends h's encoding to b.
func (h Header) Append(b []byte) []byte {
	var buf [BlockHeaderLen]byte
	n := h.Put(buf[:])
	return append(b, buf[:n]...)
}

// End reports whether h ends a message.
func (h Header) End() bool { return h.Flags&FlagEnd != 0 }

// Parse decodes and validates a header for an association of streams
// streams; a Block header's Seq, which follows, is not read. Errors wrap
// transport.ErrProtocol or transport.ErrMessageTooLarge.
func Parse(b []byte, streams int) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("%w: frame header truncated (%d bytes)", transport.ErrProtocol, len(b))
	}
	h := Header{
		Type:   Type(b[0]),
		Flags:  b[1],
		Stream: binary.BigEndian.Uint16(b[2:]),
		Len:    binary.BigEndian.Uint32(b[4:]),
		MsgLen: binary.BigEndian.Uint32(b[8:]),
	}
	return h, h.validate(streams)
}

func (h Header) validate(streams int) error {
	switch h.Type {
	case Data, Block:
		return h.validateData(streams)
	case Close, Ping:
		if h.Flags&^h.Type.flags() != 0 || h.Stream != 0 || h.Len != 0 || h.MsgLen != 0 {
			return fmt.Errorf("%w: malformed %s frame", transport.ErrProtocol, h.Type)
		}
	case Abort:
		if h.Flags != 0 || h.Stream != 0 || h.Len > MaxReason || h.MsgLen != 0 {
			return fmt.Errorf("%w: malformed abort frame", transport.ErrProtocol)
		}
	default:
		return fmt.Errorf("%w: unknown frame type %d", transport.ErrProtocol, h.Type)
	}
	return nil
}

// flags are the flags a frame of type t may carry, Data and Block aside.
func (t Type) flags() uint8 {
	if t == Ping {
		return FlagIdle
	}
	return 0
}

func (h Header) validateData(streams int) error {
	switch {
	case int(h.Stream) >= streams:
		return fmt.Errorf("%w: frame for stream %d of %d", transport.ErrProtocol, h.Stream, streams)
	case h.Flags&^FlagEnd != 0:
		return fmt.Errorf("%w: unknown frame flags %#x", transport.ErrProtocol, h.Flags)
	case h.MsgLen > transport.MaxMessageSize:
		return fmt.Errorf("%w: peer announced %d bytes", transport.ErrMessageTooLarge, h.MsgLen)
	case h.Len > MaxPayload || h.Len > h.MsgLen:
		return fmt.Errorf("%w: frame of %d bytes in a %d-byte message", transport.ErrProtocol, h.Len, h.MsgLen)
	case h.Len == 0 && h.MsgLen != 0:
		return fmt.Errorf("%w: empty frame", transport.ErrProtocol)
	}
	return nil
}

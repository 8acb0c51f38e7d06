package frame

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/braidhq/braid/transport"
)

// maxPrealloc bounds what a reader allocates for a message before its bytes
// arrive, so that a peer announcing huge messages cannot reserve memory for
// free.
const maxPrealloc = 4 << 20

// MaxPartialBytes bounds the announced lengths of the messages one
// association's receivers reassemble at once, summed over its streams. A
// sender must not have more in progress (see transport/internal/mux); a
// receiver told of more either waits for messages under way to complete
// (one connection per stream) or aborts (one connection for all).
const MaxPartialBytes = 256 << 20

// Budget accounts the messages an association is reassembling, by their
// announced length. A Reader reserves a message's length when its first
// frame arrives (unless that frame is the whole message) and releases it
// when the message completes. Reserve may wait, or fail with an error that
// ends the Reader.
type Budget interface {
	Reserve(n uint32) error
	Release(n uint32)
}

// Reader reads frames from a connection and reassembles messages. It is
// used by one goroutine.
type Reader struct {
	// Budget, if set, bounds the messages under reassembly.
	Budget Budget

	r       *bufio.Reader
	streams int
	hdr     [BlockHeaderLen]byte
	partial [][]byte // per stream: the message being reassembled, or nil
	msgLen  []uint32
}

// NewReader returns a Reader for an association of streams streams.
func NewReader(r io.Reader, streams int) *Reader {
	return &Reader{
		r:       bufio.NewReaderSize(r, 4<<10),
		streams: streams,
		partial: make([][]byte, streams),
		msgLen:  make([]uint32, streams),
	}
}

// Next reads the next frame. For a Data frame that completes a message, msg
// is that message (owned by the caller, never nil); for other Data frames
// msg is nil. For a Block frame msg is the block's payload (owned by the
// caller, never nil): putting blocks together is the caller's job. For an
// Abort frame msg is the reason. I/O errors are returned as they are;
// malformed input wraps transport.ErrProtocol.
func (r *Reader) Next() (h Header, msg []byte, err error) {
	if _, err := io.ReadFull(r.r, r.hdr[:HeaderLen]); err != nil {
		return h, nil, err
	}
	if h, err = Parse(r.hdr[:HeaderLen], r.streams); err != nil {
		return h, nil, err
	}
	switch h.Type {
	case Data:
		msg, err = r.data(h)
	case Block:
		if _, err = io.ReadFull(r.r, r.hdr[HeaderLen:]); err == nil {
			h.Seq = binary.BigEndian.Uint32(r.hdr[HeaderLen:])
			msg = make([]byte, h.Len)
			_, err = io.ReadFull(r.r, msg)
		}
	case Abort:
		msg = make([]byte, h.Len)
		_, err = io.ReadFull(r.r, msg)
	}
	return h, msg, unexpectedEOF(err)
}

// data reads a data frame's payload into its stream's message.
func (r *Reader) data(h Header) ([]byte, error) {
	s := h.Stream
	buf := r.partial[s]
	if buf == nil && !h.End() && r.Budget != nil {
		if err := r.Budget.Reserve(h.MsgLen); err != nil {
			return nil, err
		}
	}
	if buf == nil {
		// Reserve for the first frame and a little more, not for the
		// announced length: a peer could start a huge message on every
		// stream. slices.Grow doubles as frames arrive.
		buf = make([]byte, 0, min(h.MsgLen, max(2*h.Len, 64<<10), maxPrealloc))
		r.msgLen[s] = h.MsgLen
	}
	if h.MsgLen != r.msgLen[s] || uint64(len(buf))+uint64(h.Len) > uint64(h.MsgLen) {
		return nil, fmt.Errorf("%w: stream %d: frame does not fit its message", transport.ErrProtocol, s)
	}
	n := len(buf)
	buf = slices.Grow(buf, int(h.Len))[:n+int(h.Len)]
	if _, err := io.ReadFull(r.r, buf[n:]); err != nil {
		return nil, err
	}
	complete := len(buf) == int(h.MsgLen)
	if complete != h.End() {
		return nil, fmt.Errorf("%w: stream %d: end flag at %d of %d bytes", transport.ErrProtocol, s, len(buf), h.MsgLen)
	}
	if !complete {
		r.partial[s] = buf
		return nil, nil
	}
	if r.partial[s] != nil && r.Budget != nil {
		r.Budget.Release(h.MsgLen)
	}
	r.partial[s] = nil
	return buf, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

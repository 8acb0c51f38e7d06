package mux

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// Batches. A server with several units for one worker at once, or a worker
// with several results, hands them over together: SendBatch writes the
// frames of consecutive single-frame messages in one write, up to
// maxBatchBytes, instead of a system call each, and RecvBatch takes the
// messages a stream's queue holds in one call. On the wire a batch is the
// frames its messages would have had one by one.

// maxBatchBytes bounds the frames SendBatch copies into one write.
const maxBatchBytes = 64 << 10

// batchPool recycles SendBatch's write buffers, so that an idle link holds
// none.
var batchPool = sync.Pool{New: func() any { return new([]byte) }}

var (
	_ transport.BatchSender   = (*Assoc)(nil)
	_ transport.BatchReceiver = (*Assoc)(nil)
)

// SendBatch sends msgs on stream s as a Send of each in turn would; the
// frames of consecutive messages of up to one frame each go out in one
// write. Striped, it is a Send of each.
func (a *Assoc) SendBatch(ctx context.Context, s int, msgs [][]byte) error {
	if err := a.checkSend(s, msgs); err != nil {
		return err
	}
	if err := a.acquire(ctx, a.ssem[s]); err != nil {
		return err
	}
	defer func() { <-a.ssem[s] }()
	for len(msgs) > 0 {
		n := batchLen(msgs)
		if n == 0 || a.cfg.Striped {
			n = 1
			if err := a.sendLocked(ctx, s, msgs[0]); err != nil {
				return err
			}
		} else if err := a.writeBatch(ctx, a.linkOf(s), s, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
	}
	return nil
}

// checkSend fails a Send of one message, or a batch any of whose messages
// Send would refuse, before any is sent.
func (a *Assoc) checkSend(s int, msgs [][]byte) error {
	if err := a.checkStream(s); err != nil {
		return err
	}
	for _, p := range msgs {
		if len(p) > transport.MaxMessageSize {
			return fmt.Errorf("%w: %d bytes", transport.ErrMessageTooLarge, len(p))
		}
	}
	if err := a.sendErr(); err != nil {
		return err
	}
	if a.closeStarted.Load() {
		return transport.ErrClosed
	}
	return nil
}

// batchLen is how many of msgs, from the first, go in one write: messages
// of one frame each, maxBatchBytes of frames at most. Zero means the first
// message takes more than one frame.
func batchLen(msgs [][]byte) int {
	size := 0
	for i, p := range msgs {
		if len(p) > frame.MaxPayload {
			return i
		}
		if size += frame.HeaderLen + len(p); size > maxBatchBytes && i > 0 {
			return i
		}
	}
	return len(msgs)
}

// writeBatch writes one frame for each of msgs, each a whole message of
// stream s, on l in one write.
func (a *Assoc) writeBatch(ctx context.Context, l *link, s int, msgs [][]byte) error {
	bp := batchPool.Get().(*[]byte)
	defer batchPool.Put(bp)
	buf := (*bp)[:0]
	for _, p := range msgs {
		h := frame.Header{Type: frame.Data, Flags: frame.FlagEnd, Stream: uint16(s), Len: uint32(len(p)), MsgLen: uint32(len(p))}
		buf = append(h.Append(buf), p...)
	}
	*bp = buf
	bufs := net.Buffers{buf}
	return a.writeOn(ctx, l, false, func() (int64, error) { return l.writeBufs(ctx, &bufs) })
}

// RecvBatch waits for the next message on stream s, as Recv does, and
// appends it and the messages queued behind it, up to max in all, to msgs.
func (a *Assoc) RecvBatch(ctx context.Context, s int, msgs [][]byte, max int) ([][]byte, error) {
	p, err := a.Recv(ctx, s)
	if err != nil {
		return msgs, err
	}
	msgs = append(msgs, p)
	for n := 1; n < max; n++ {
		p, ok := a.queues[s].TryPop()
		if !ok {
			break
		}
		msgs = append(msgs, p)
	}
	return msgs, nil
}

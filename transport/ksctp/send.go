package ksctp

import (
	"context"
	"fmt"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// Send sends p on stream s as one message, in fragments of at most a.frag
// bytes with their headers (sctpwire). Before each fragment it waits for
// the stream's credit, then for socket buffer space.
func (a *assoc) Send(ctx context.Context, s int, p []byte) error {
	st, err := a.stream(s)
	if err != nil {
		return err
	}
	if len(p) > transport.MaxMessageSize {
		return fmt.Errorf("%w: %d bytes", transport.ErrMessageTooLarge, len(p))
	}
	if err := a.Err(); err != nil {
		return err
	}
	if a.closeStarted.Load() {
		return transport.ErrClosed
	}
	select {
	case st.sendSem <- struct{}{}:
	case <-a.done:
		return a.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-st.sendSem }()
	if h := st.abandon; h != nil {
		if err := a.write(ctx, sctpwire.DataStream(s), sctpwire.AppendFragHeader(st.buf[:0], *h)); err != nil {
			return err
		}
		st.abandon = nil
	}
	id := st.nextID
	st.nextID++
	off, err := a.sendFragments(ctx, st, s, id, p)
	if err != nil && off > 0 {
		st.abandon = &sctpwire.FragHeader{Flags: sctpwire.FlagAbandon, MsgID: id, Offset: uint32(off), Total: uint32(len(p))}
	}
	return err
}

// sendFragments sends p's fragments and returns how far it got.
func (a *assoc) sendFragments(ctx context.Context, st *stream, s int, id uint32, p []byte) (int, error) {
	fs := a.frag - sctpwire.FragHeaderLen
	for off := 0; off == 0 || off < len(p); {
		n := min(fs, len(p)-off)
		h := sctpwire.FragHeader{MsgID: id, Offset: uint32(off), Total: uint32(len(p))}
		if off+n == len(p) {
			h.Flags = sctpwire.FlagLast
		}
		st.buf = append(sctpwire.AppendFragHeader(st.buf[:0], h), p[off:off+n]...)
		if err := a.sendPiece(ctx, st, s, st.buf); err != nil {
			return off, err
		}
		off += n
		if off == 0 {
			break // empty message
		}
	}
	return len(p), nil
}

// sendPiece waits for the fragment's credit and takes it before writing,
// since the peer may consume the fragment and grant more before write
// returns; a failed write gives it back.
func (a *assoc) sendPiece(ctx context.Context, st *stream, s int, frag []byte) error {
	cost := uint64(len(frag))
	if err := a.takeCredit(ctx, st, cost); err != nil {
		return err
	}
	err := a.write(ctx, sctpwire.DataStream(s), frag)
	if err != nil {
		st.mu.Lock()
		st.sent -= cost
		st.mu.Unlock()
	}
	return err
}

// takeCredit waits until cost more bytes fit under the peer's limit on st
// and consumes them.
func (a *assoc) takeCredit(ctx context.Context, st *stream, cost uint64) error {
	for {
		st.mu.Lock()
		ok := st.sent+cost <= st.limit
		if ok {
			st.sent += cost
		}
		st.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-st.creditc:
		case <-a.done:
			return a.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

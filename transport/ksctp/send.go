package ksctp

import (
	"context"
	"fmt"

	"github.com/braidhq/braid/transport"
)

// Send sends p on stream s as one message, in fragments of at most a.frag
// bytes. It waits for the stream's credit, then for socket buffer space.
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
	if st.dirty {
		if err := a.write(ctx, s, ppidDrop, []byte{0}); err != nil {
			return err
		}
		st.dirty = false
	}
	if err := a.waitCredit(ctx, st); err != nil {
		return err
	}
	if len(p) == 0 {
		return a.sendPiece(ctx, st, s, ppidEmpty, []byte{0})
	}
	for off := 0; off < len(p); off += a.frag {
		end, ppid := off+a.frag, ppidMore
		if end >= len(p) {
			end, ppid = len(p), ppidEnd
		}
		if err := a.sendPiece(ctx, st, s, ppid, p[off:end]); err != nil {
			st.dirty = off > 0
			return err
		}
	}
	return nil
}

// sendPiece takes the credit before writing, since the peer may consume
// the piece and return its credit before write returns.
func (a *assoc) sendPiece(ctx context.Context, st *stream, s int, ppid uint32, p []byte) error {
	st.addCredit(-int64(len(p)))
	err := a.write(ctx, s, ppid, p)
	if err != nil {
		st.addCredit(int64(len(p)))
	}
	return err
}

// waitCredit waits until the peer has room for another message on st.
func (a *assoc) waitCredit(ctx context.Context, st *stream) error {
	for {
		st.mu.Lock()
		c := st.sendCredit
		st.mu.Unlock()
		if c > 0 {
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

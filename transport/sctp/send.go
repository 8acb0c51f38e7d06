package sctp

import (
	"context"
	"errors"
	"fmt"

	"github.com/braidhq/braid/transport"
)

// Send implements transport.Association. It cuts p into fragments of at
// most Config.FragmentSize bytes and, before each one, waits for credit and
// then for its turn in the association's scheduler (sched.go).
func (a *Association) Send(ctx context.Context, s int, p []byte) error {
	if s < 0 || s >= len(a.send) {
		return fmt.Errorf("%w: %d of %d", transport.ErrBadStream, s, len(a.send))
	}
	if len(p) > transport.MaxMessageSize {
		return fmt.Errorf("%w: %d bytes", transport.ErrMessageTooLarge, len(p))
	}
	if a.closeStarted.Load() {
		return transport.ErrClosed
	}
	ss := a.send[s]
	if err := ss.acquire(ctx, a.done); err != nil {
		return a.sendErr(err)
	}
	defer ss.release()
	select {
	case <-a.done:
		return a.endErr()
	default:
	}
	id := ss.nextID
	ss.nextID++
	off, err := a.sendFragments(ctx, s, id, p)
	a.sched.away(s)
	if err != nil && off > 0 && !errors.Is(err, errEnded) {
		a.abandon(s, id, off, len(p))
	}
	return a.sendErr(err)
}

// sendFragments sends p's fragments and returns how far it got.
func (a *Association) sendFragments(ctx context.Context, s int, id uint32, p []byte) (int, error) {
	ss, fs := a.send[s], a.cfg.FragmentSize
	for off := 0; off == 0 || off < len(p); {
		n := min(fs, len(p)-off)
		cost := n + fragHeaderLen
		if !ss.tryTake(cost) {
			a.sched.away(s) // the others must not wait for it meanwhile
			if err := ss.take(ctx, a.done, cost); err != nil {
				return off, err
			}
		}
		if err := a.sched.wait(ctx, a.done, s, cost, len(p)-off); err != nil {
			ss.refund(cost)
			return off, err
		}
		h := fragHeader{msgID: id, offset: uint32(off), total: uint32(len(p))}
		if off+n == len(p) {
			h.flags = flagLast
		}
		// A fragment of its own, handed to pion, which keeps it until it is
		// acknowledged (append copies the payload without zeroing first).
		var hdr [fragHeaderLen]byte
		frag := append(appendFragHeader(hdr[:0], h), p[off:off+n]...)
		_, err := a.data[s].WriteSCTPOwned(frag, ppi)
		a.sched.written(s, cost)
		if err != nil {
			a.fail(fmt.Errorf("%w: %v", transport.ErrPeerClosed, err))
			return off, errEnded
		}
		off += n
		if off == 0 {
			break // empty message
		}
	}
	return len(p), nil
}

// abandon tells the receiver to drop the partial message id (it needs no
// credit: at most one per message).
func (a *Association) abandon(s int, id uint32, off, total int) {
	ss := a.send[s]
	h := fragHeader{flags: flagAbandon, msgID: id, offset: uint32(off), total: uint32(total)}
	ss.buf = appendFragHeader(ss.buf[:0], h)
	if _, err := a.data[s].WriteSCTP(ss.buf, ppi); err != nil {
		a.fail(fmt.Errorf("%w: %v", transport.ErrPeerClosed, err))
	}
}

// sendErr maps internal errors to the transport's.
func (a *Association) sendErr(err error) error {
	if errors.Is(err, errEnded) {
		return a.endErr()
	}
	return err
}

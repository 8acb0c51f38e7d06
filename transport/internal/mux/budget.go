package mux

import (
	"context"
	"fmt"
	"sync"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// Messages under way. A receiver reassembles a message frame by frame, and
// its buffer grows with the bytes that arrive; but a peer could start a
// message on every stream and finish none. So an association bounds the
// announced lengths of the messages it is reassembling at once by
// Config.PartialBytes, frame.MaxPartialBytes by default (recvBudget), and a sender keeps to the same bound:
//
//   - One link for all streams ("tcp"): the sender takes a message's length
//     from sendBudget before its first frame and gives it back after its
//     last; frames arrive in the order they were written, so an honest
//     peer never exceeds the bound, and one that does is aborted.
//   - One link per stream ("tcpn"): the sender does not wait, so that a
//     stalled stream cannot hold the others; a receiver over the bound
//     waits until messages under way on other links complete. Those hold
//     their reservation whole and never wait again, so they do complete.

// recvBudget is an association's frame.Budget.
type recvBudget struct {
	max  int64
	wait bool          // wait for room (one link per stream) or fail
	stop chan struct{} // the association's stop: waiting ends

	mu      sync.Mutex // guards used and changed
	used    int64
	changed chan struct{} // closed and replaced on each Release
}

var _ frame.Budget = (*recvBudget)(nil)

func newRecvBudget(max int64, wait bool, stop chan struct{}) *recvBudget {
	return &recvBudget{max: max, wait: wait, stop: stop, changed: make(chan struct{})}
}

// Reserve takes n bytes of the budget; a single message always fits.
func (b *recvBudget) Reserve(n uint32) error {
	_, err := b.reserveUnless(n, nil)
	return err
}

// reserveUnless is Reserve that stops waiting, with ok false and nothing
// taken, once unless is closed.
func (b *recvBudget) reserveUnless(n uint32, unless <-chan struct{}) (ok bool, err error) {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+int64(n) <= b.max {
			b.used += int64(n)
			b.mu.Unlock()
			return true, nil
		}
		changed := b.changed
		b.mu.Unlock()
		if !b.wait {
			return false, fmt.Errorf("%w: peer has more than %d bytes of messages under way", transport.ErrProtocol, b.max)
		}
		select {
		case <-changed:
		case <-unless:
			return false, nil
		case <-b.stop:
			return false, transport.ErrClosed
		}
	}
}

// Release gives n bytes back and wakes the waiters.
func (b *recvBudget) Release(n uint32) {
	b.mu.Lock()
	b.used -= int64(n)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// reserveSend takes a message of n bytes from the send budget when it will
// go in more than one frame on a shared link; release gives it back.
func (a *Assoc) reserveSend(ctx context.Context, n int) (release func(), err error) {
	if a.sendBudget == nil || n <= frame.MaxPayload && (!a.cfg.Striped || n <= a.cfg.BlockSize) {
		return func() {}, nil // one frame (block): the receiver reserves nothing
	}
	n = min(n, int(a.cfg.PartialBytes)) // one message always fits, as in Reserve
	if a.sendBudget.TryAcquire(int64(n)) {
		return func() { a.sendBudget.Release(int64(n)) }, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // ends with the Acquire: cancel is deferred

		select {
		case <-a.lclosed:
		case <-a.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	if err := a.sendBudget.Acquire(ctx, int64(n)); err != nil {
		if serr := a.sendErr(); serr != nil {
			return nil, serr
		}
		return nil, err
	}
	return func() { a.sendBudget.Release(int64(n)) }, nil
}

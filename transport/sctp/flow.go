package sctp

import (
	"context"
	"fmt"
	"sync"

	"github.com/braidhq/braid/transport"
)

// Credit-based flow control per logical stream. Both sides count "cost": the
// bytes of every fragment put on the stream, header included. The sender may
// put a fragment on the stream only while sent+cost <= limit; the receiver
// raises limit (a cumulative count, sent on the control stream) to
// released+window as its application consumes messages. The receiver also
// releases the fragments of a message still being reassembled while its
// queue of finished messages is empty, so one message larger than the window
// can always complete. Per stream a receiver thus holds at most one window
// plus one message, and an unread stream stalls only its own senders.

// sendStream is the sending half of a logical stream.
type sendStream struct {
	lock chan struct{} // one-slot semaphore: held for a whole message

	mu    sync.Mutex // guards sent, limit
	sent  uint64
	limit uint64
	wake  chan struct{} // poked when limit grows

	nextID uint32 // guarded by lock
	buf    []byte // an abandon fragment's scratch; guarded by lock (pion copies on write)
}

func newSendStream() *sendStream {
	return &sendStream{lock: make(chan struct{}, 1), limit: initialCredit, wake: make(chan struct{}, 1)}
}

// acquire takes the message lock.
func (s *sendStream) acquire(ctx context.Context, done <-chan struct{}) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return errEnded
	}
}

func (s *sendStream) release() { <-s.lock }

// grant raises the limit to l (stale grants are ignored).
func (s *sendStream) grant(l uint64) {
	s.mu.Lock()
	if l > s.limit {
		s.limit = l
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// tryTake consumes cost bytes of credit if the stream has them.
func (s *sendStream) tryTake(cost int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent+uint64(cost) > s.limit {
		return false
	}
	s.sent += uint64(cost)
	return true
}

// take waits for cost bytes of credit and consumes them.
func (s *sendStream) take(ctx context.Context, done <-chan struct{}, cost int) error {
	for {
		s.mu.Lock()
		if s.sent+uint64(cost) <= s.limit {
			s.sent += uint64(cost)
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return errEnded
		}
	}
}

// refund gives back cost bytes taken for a fragment that was not sent.
func (s *sendStream) refund(cost int) {
	s.mu.Lock()
	s.sent -= uint64(cost)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// errEnded is an internal signal: the association ended; callers replace it
// with the association's error.
var errEnded = fmt.Errorf("sctp: association ended")

// message is a finished message waiting for Recv.
type message struct {
	data   []byte
	unpaid uint64 // cost not yet released to the sender
}

// recvStream is the receiving half of a logical stream. Its reader goroutine
// feeds fragments in; Recv takes messages out.
type recvStream struct {
	window uint64
	reasm  *reasmBudget

	mu       sync.Mutex // guards everything below
	q        []message
	partial  []byte // message being reassembled (its bytes so far), nil if none
	pID      uint32
	pOff     int // len(partial)
	pTotal   int // the message's announced length
	pUnpaid  uint64
	received uint64 // cost received
	released uint64 // cost given back
	granted  uint64 // limit last sent to the peer
	err      error  // set when no more messages will come
	wake     chan struct{}
}

func newRecvStream(window int, rb *reasmBudget) *recvStream {
	return &recvStream{window: uint64(window), reasm: rb, granted: initialCredit, wake: make(chan struct{}, 1)}
}

func (r *recvStream) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// initialGrant is the limit to announce at setup, or 0 if the initial
// credit already covers the window.
func (r *recvStream) initialGrant() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, _ := r.grantLocked(true)
	return l
}

// grantLocked returns a new limit to send when enough credit has built up.
func (r *recvStream) grantLocked(force bool) (uint64, bool) {
	l := r.released + r.window
	if l <= r.granted || (!force && l-r.granted < r.window/4) {
		return 0, false
	}
	r.granted = l
	return l, true
}

// fail ends the stream with err unless it has ended already; override
// replaces an earlier error and drops queued messages (local close).
func (r *recvStream) fail(err error, override bool) {
	r.mu.Lock()
	if r.err == nil || override {
		r.err = err
		if override {
			r.q = nil
		}
	}
	r.dropPartialLocked()
	r.mu.Unlock()
	r.poke()
}

func (r *recvStream) dropPartialLocked() {
	if r.partial != nil {
		r.reasm.put(int64(r.pTotal))
		r.partial = nil
	}
}

// Recv returns the next message and, if due, a credit limit to send.
func (r *recvStream) recv(ctx context.Context) ([]byte, uint64, error) {
	for {
		r.mu.Lock()
		if len(r.q) > 0 {
			m := r.q[0]
			r.q[0] = message{}
			r.q = r.q[1:]
			r.released += m.unpaid
			if len(r.q) == 0 {
				r.released += r.pUnpaid
				r.pUnpaid = 0
			}
			l, _ := r.grantLocked(false)
			r.mu.Unlock()
			return m.data, l, nil
		}
		err := r.err
		r.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// reasmBudget bounds the bytes of partly received messages in an association.
type reasmBudget struct {
	mu   sync.Mutex // guards used
	used int64
	max  int64
}

func (b *reasmBudget) get(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return fmt.Errorf("%w: reassembly memory cap %d bytes exceeded", transport.ErrProtocol, b.max)
	}
	b.used += n
	return nil
}

func (b *reasmBudget) put(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

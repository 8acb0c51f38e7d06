package ksctp

import (
	"sync"

	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// window is the per-stream credit a receiver grants beyond what its
// application has consumed (sctpwire's flow control, counted in fragment
// bytes with their headers). Per stream a receiver thus holds at most one
// window plus one message. A grant goes out each time a quarter window has
// been released. Grants are what bounds the window from below: in the test
// VM a 64 MiB message took 14-23 s with a 4 MiB window (a grant per MiB)
// against 4-6 s with 16 MiB, the old per-message credit's speed (each
// grant sent against a bulk transfer costs far more than its syscalls
// there; the cause is not pinned down).
const window = 16 << 20

// qmsg is a finished message waiting for Recv and the cost its
// consumption releases.
type qmsg struct {
	b      []byte
	unpaid uint64
}

// stream is one logical stream's send and receive state.
type stream struct {
	// sendSem is a one-slot semaphore that keeps a message's fragments
	// together on the stream (a channel so that waiting honours ctx).
	sendSem chan struct{}
	// Guarded by sendSem: the next message id, the fragment scratch
	// buffer, and a message stopped midway that the peer must be told to
	// drop (abandon) before the next one.
	nextID  uint32
	buf     []byte
	abandon *sctpwire.FragHeader

	// creditc wakes a sender waiting for credit; ready wakes a receiver.
	creditc, ready chan struct{}

	mu sync.Mutex // guards the fields below
	// Sending: cost put on the stream and the peer's latest limit.
	sent, limit uint64
	// Receiving: finished messages; cost received, released back to the
	// peer and granted (the limit last announced); cost of the partial
	// message not yet released; whether a grant is waiting for the credit
	// writer.
	queue                       []qmsg
	received, released, granted uint64
	pUnpaid                     uint64
	grantDue                    bool

	// Owned by the receive loop.
	piece []byte // the SCTP message being read (partial delivery)
	asm   []byte // the braid message being reassembled
	asmID uint32
	inMsg bool // asm holds a started message
	total uint32
}

func newStream() *stream {
	return &stream{
		sendSem: make(chan struct{}, 1),
		creditc: make(chan struct{}, 1),
		ready:   make(chan struct{}, 1),
		limit:   sctpwire.InitialCredit,
		granted: sctpwire.InitialCredit,
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// grantLocked records a new limit for the credit writer when at least a
// quarter window of credit has built up (or, forced, any at all), and
// reports whether it did. The caller holds st.mu.
func (st *stream) grantLocked(force bool) bool {
	l := st.released + window
	if l <= st.granted || (!force && l-st.granted < window/4) {
		return false
	}
	st.granted, st.grantDue = l, true
	return true
}

// grant raises the send limit to l (stale grants are ignored).
func (st *stream) grant(l uint64) {
	st.mu.Lock()
	raised := l > st.limit
	if raised {
		st.limit = l
	}
	st.mu.Unlock()
	if raised {
		wake(st.creditc)
	}
}

package ksctp

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// maxWindow is the most per-stream credit a receiver grants beyond what
// its application has consumed (sctpwire's flow control, counted in
// fragment bytes with their headers); recvWindow picks the window for a
// socket. Per stream a receiver thus holds at most one window plus one
// message. A grant goes out each time a quarter window has been released.
const maxWindow = 16 << 20

// recvWindow is the per-stream window for a socket: maxWindow, but no more
// than three quarters of the kernel's receive window, which Linux makes
// half of SO_RCVBUF as getsockopt reports it (that value is doubled). We
// ask for 4 MiB; Debian's rmem_max of 208 KiB leaves a 208 KiB kernel
// window and a 156 KiB braid window.
//
// Credit beyond the kernel's window does not make a stream faster, since
// the kernel stops the sender there anyway, but it lets a sender outrun a
// busy receiver: the kernel's buffer fills, the sender probes the closed
// window with a chunk, the receiver discards it, and every stream waits for
// the retransmission timer, at least RTO.Min (1 s). This was the cost the
// old fixed 16 MiB window paid in the test VM: about two chunks discarded
// per 2 s of bulk (SctpInDataChunkDiscards), bulk held to 3-4 MB/s and
// 100-byte round trips beside it at a p99 of 1.05 s. Within the kernel's
// window nothing was discarded, bulk ran at 34-39 MB/s and the round trips'
// p99 was 12-16 ms. Several streams busy at once can still overrun a
// receiver that stops reading; that costs a stall, not data.
func recvWindow(fd int) uint64 {
	rb, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil || rb <= 0 {
		return minWindow
	}
	return min(max(uint64(rb)/2*3/4, minWindow), maxWindow)
}

// minWindow is the least window recvWindow picks, about two fragments.
const minWindow = 128 << 10

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
	// window is the credit this end grants beyond what it has released
	// (recvWindow).
	window uint64
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

func newStream(window uint64) *stream {
	return &stream{
		window:  window,
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
	l := st.released + st.window
	if l <= st.granted || (!force && l-st.granted < st.window/4) {
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

package ksctp

import "sync"

// Payload protocol ids (sent in network byte order) tell the kinds of SCTP
// message apart; every one carries at least one byte, since SCTP has no
// empty messages.
const (
	ppidMore      uint32 = 1 + iota // data fragment, more follow
	ppidEnd                         // last data fragment of a message
	ppidEmpty                       // an empty message (one pad byte)
	ppidDrop                        // the sender gave up mid-message: drop the partial one
	ppidCredit                      // flow-control credit: 8-byte big-endian byte count
	ppidHandshake                   // braid handshake, stream 0, before any data
	ppidPing                        // keep-alive, stream 0, one zero byte (liveness.go)
)

// window is the per-stream flow-control window in bytes. A sender starts a
// message only while fewer than window bytes are unacknowledged by the
// receiving application, so a stream's queue holds at most window plus one
// message.
const window = 4 << 20

// qmsg is a received message and the credit it returns once consumed.
type qmsg struct {
	b    []byte
	cost int64
}

// stream is one logical stream's send and receive state.
type stream struct {
	// sendSem is a one-slot semaphore that keeps a message's fragments
	// together on the stream (a channel so that waiting honours ctx).
	sendSem chan struct{}
	// dirty is guarded by sendSem: a Send stopped mid-message and the
	// peer must be told to drop the partial message.
	dirty bool
	// creditc wakes a sender waiting for credit; ready wakes a receiver.
	creditc, ready chan struct{}

	mu sync.Mutex // guards the fields below
	// sendCredit is how many bytes we may still send before the peer
	// returns credit.
	sendCredit int64
	queue      []qmsg
	// outstanding counts bytes received and not yet credited back;
	// unreported (part of it) those already consumed; pending the credit
	// waiting for the credit writer.
	outstanding, unreported, pending int64

	// Owned by the receive loop.
	piece []byte // the SCTP message being read (partial delivery)
	asm   []byte // the braid message being reassembled
	inMsg bool   // asm holds a started message
}

func newStream() *stream {
	return &stream{
		sendSem:    make(chan struct{}, 1),
		creditc:    make(chan struct{}, 1),
		ready:      make(chan struct{}, 1),
		sendCredit: window,
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// consumed records that cost bytes left the stream and reports whether
// credit is now due to the peer. The caller holds st.mu.
func (st *stream) consumed(cost int64) bool {
	st.unreported += cost
	if st.unreported < window/4 {
		return false
	}
	st.outstanding -= st.unreported
	st.pending += st.unreported
	st.unreported = 0
	return true
}

func (st *stream) addCredit(n int64) {
	st.mu.Lock()
	st.sendCredit += n
	st.mu.Unlock()
}

package ksctp

import (
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
)

// Liveness. Kernel SCTP has heartbeats and gives up on a peer that stops
// acknowledging, but the kernel answers them on behalf of a process that is
// frozen (SIGSTOP) or wedged, and its give-up time is tens of seconds by
// default. So braid keeps a clock of its own (transport/internal/alive):
//
//   - Every piece the receive loop reads is a sign of life. The loop drains
//     the socket into per-stream queues bounded by credit and never waits
//     for the application, so a stalled local reader cannot silence the
//     peer.
//   - When nothing has been sent for a third of the negotiated liveness, the
//     association sends a ping: one zero byte on stream 0 with payload
//     protocol id ppidPing, which the receiver only notes. It goes out only
//     if that needs no waiting (no sendmsg under way, room in the socket
//     buffer); otherwise the association is sending already.
//   - When nothing has arrived for the whole liveness, the association is
//     aborted (an SCTP ABORT is sent) with a *transport.PeerLostError.

// pingMsg is a ping's payload: SCTP has no empty messages.
var pingMsg = []byte{0}

// startKeepAlive starts the keep-alive loop; it exits when the association
// ends.
func (a *assoc) startKeepAlive() {
	if a.liveness <= 0 {
		return
	}
	loop := &alive.Loop{
		Bound: a.liveness,
		Clock: &a.clock,
		Ping: func() {
			if a.c.tryWriteMsg(0, ppidPing, pingMsg) {
				a.clock.Sent()
			}
		},
		Lost: func(e *transport.PeerLostError) { a.abort(e, e) },
	}
	a.loops.Go(func() { loop.Run(a.done) })
}

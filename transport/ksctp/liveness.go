package ksctp

import (
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/braidhq/braid/transport/internal/sctpwire"
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
//     association sends a ping: sctpwire's ping control message on the
//     control stream, which the receiver only notes. It goes out only
//     if that needs no waiting (no sendmsg under way, room in the socket
//     buffer); otherwise the association is sending already.
//   - When nothing has arrived for the whole liveness, the association is
//     aborted (an SCTP ABORT is sent) with a *transport.PeerLostError.

// pingMsg is a ping control message.
var pingMsg = sctpwire.AppendPing(nil)

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
			if a.c.tryWriteMsg(sctpwire.ControlStream, sctpwire.PPID, pingMsg) {
				a.clock.Sent()
			}
		},
		Lost: func(e *transport.PeerLostError) { a.abort(e, e) },
	}
	a.loops.Go(func() { loop.Run(a.done) })
}

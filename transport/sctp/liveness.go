package sctp

import (
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
)

// Liveness. pion/sctp never gives up on a peer: its retransmission timer
// backs off without an error count and it sends no heartbeats of its own, so
// on its own an association with a peer that was killed, frozen or cut off
// lives forever. The transport's net.Conn wrappers (pconn, dconn) see every
// datagram pion reads and writes, and record on the association's clock
// (transport/internal/alive) when the last well-formed one arrived and when
// the last one left. Each association's keep-alive loop then:
//
//   - sends a braid ping (a control message on stream 0, see
//     transport/internal/sctpwire) when nothing has left for a third of the
//     negotiated liveness, so that an idle peer hears from us at least that
//     often; and also when nothing has arrived for a third of it, so that
//     the SACK the peer's stack returns for the ping can prove it alive. At
//     most one ping per third.
//   - aborts the association with a *transport.PeerLostError once nothing
//     has arrived for the whole liveness.
//
// Besides, pingEveryThird sends a ping every third of the liveness
// whatever else goes out, for kernel-stack peers, which count only braid
// messages as signs of life (see there).
//
// The ping is braid's, not an SCTP HEARTBEAT: pion v1.11.3 sends
// ActiveHeartbeat's HEARTBEAT without its Heartbeat Info parameter (its
// chunkHeartbeat defines Marshal, not the marshal its chunk interface
// calls), which a pion peer drops with a warning and the Linux kernel
// treats as a protocol violation that aborts the association. The kernel
// stack (transport/ksctp) sends the same pings, since the kernel itself
// answers SCTP heartbeats for a frozen process.
//
// Known gap with a kernel-stack peer: this clock counts every well-formed
// datagram, and a frozen kernel-stack process's kernel still acknowledges
// our pings, so from this side such a peer is taken for alive for as long
// as its kernel answers (the kernel stack's own clock does see a frozen
// userspace peer, whose pings stop).
//
// The transport drains every SCTP stream into its own queues (flow.go), so
// pion's read loop never waits for the application, and a stalled local
// reader cannot silence the peer.

// startKeepAlive starts the association's keep-alive loop (see above) on
// the conn's clock; it exits when the association ends.
func (a *Association) startKeepAlive() {
	loop := &alive.Loop{
		Bound:          a.liveness,
		Clock:          a.life,
		Ping:           a.sendPing, // the conn's Write records it
		PingWhenSilent: true,
		Lost:           func(e *transport.PeerLostError) { a.fail(e) },
	}
	a.readers.Add(2)
	go func() {
		defer a.readers.Done()
		loop.Run(a.done)
	}()
	go a.pingEveryThird()
}

// pingEveryThird sends a braid ping every third of the liveness bound
// whatever else is sent. The loop above counts every datagram as sent, SACKs
// included, but a kernel-stack peer sees only braid messages: while this
// side only receives (or its application stalls and grants no credit) its
// SACKs would keep the loop from pinging and the kernel-stack peer would
// take it for dead. One tiny DATA chunk per third is the price.
func (a *Association) pingEveryThird() {
	defer a.readers.Done()
	t := time.NewTicker(a.liveness / 3)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.sendPing()
		case <-a.done:
			return
		}
	}
}

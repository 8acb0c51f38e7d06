// Package sctp implements transport.Transport over SCTP, using the userspace
// stack github.com/pion/sctp carried in UDP datagrams (this build machine has
// no kernel SCTP).
//
// Each association runs over one UDP 4-tuple. A Listener serves any number of
// associations on one UDP port: datagrams are demultiplexed by remote address
// into per-association net.Conn wrappers. A datagram from a new address
// that opens a handshake (an SCTP INIT, a DTLS ClientHello) is answered
// with a stateless cookie, and only one that returns a valid cookie starts
// a new server-side association (cookie.go; at most Config.MaxHalfOpen at
// a time may be mid-handshake).
//
// UDP I/O is batched (batch.go): datagrams are read with recvmmsg, and
// each round of packets pion's write loop produces is sent with one sendmmsg
// from that loop, runs of equal-sized packets to one peer as one UDP GSO
// buffer; sockets ask for UDP GRO, so on loopback such a run crosses the
// kernel once. The pion/sctp in use is braid's fork, third_party/pion-sctp:
// v1.11.3 with the patch series in third_party/pion-sctp-patches, fixes
// meant for upstream and braid's additions. This package does not build
// with an unpatched pion: it calls what the fork adds to pion's API
// (Association.SetMTU, MinRTT, SetFlows, Flows, TakeCongestionSample,
// SetPacing, SetHyStart; Stream.WriteSCTPOwned), and its conns implement
// the fork's two optional conn hooks (ReadPacket; WriteOwned with Flush),
// through which pion's loops read and write without a copy. A plain Write
// is queued and sent by a flusher goroutine. Closing a conn sends what is
// queued (for at most a second) before the socket closes.
// On a long path reads are coalesced (coalesce.go): a socket busy with a
// paced flow waits up to a sixteenth of the round-trip time between reads,
// so that packets are handled and acknowledged in rounds, not one by one.
//
// Encryption (dtls.go): between hosts, by default (Config.TLS), an
// association runs over DTLS 1.2 keyed to the cluster secret, SCTP over
// DTLS over UDP as in WebRTC's data channels; both ends prove they hold the
// secret in the DTLS handshake, and every packet is one encrypted record. A
// listener takes DTLS from anyone and plaintext SCTP only from where the
// mode allows it (loopback, by default). Encrypted packets are at most
// 8 KiB, and their path MTU is not probed.
//
// Packet size (pmtu.go): an association starts with packets of 8192 bytes
// to a loopback peer and 1452 to any other (less if the route's MTU is
// smaller), sizes every braid peer reads. To a loopback peer it then sends
// one HEARTBEAT padded to 64 KiB, and uses that size once the
// HEARTBEAT-ACK comes back: the peer has read it (RFC 8899's probing).
// Bigger packets cost less CPU per byte. Config.MTU fixes the size and
// turns probing off.
//
// Layout of an association:
//
//   - SCTP stream 0 is the control stream. It carries the braid handshake
//     (transport.DialHandshake / ListenHandshake) and then control
//     messages: credit grants and pings.
//   - Logical stream i is SCTP stream i+1, ordered and reliable.
//
// The framing is transport/internal/sctpwire's, the same as the kernel
// stack's (transport/ksctp), so that a userspace-stack process and a
// kernel-stack one associate with each other. On the wire to a kernel peer
// (ports.go): an address host:port means UDP port `port` carrying SCTP port
// `port`, on both stacks. pion always uses SCTP port 5000, so a dialer
// rewrites its packets' ports to (local UDP port, remote UDP port), which
// lets a kernel tell pion dialers apart and find its listener; every
// association strips from an incoming INIT the parameters the Linux kernel
// sends and pion would refuse the INIT for, and never sends pion's bare
// HEARTBEATs, which the kernel aborts on. Pings are braid control messages
// (liveness.go).
//
// Messages larger than Config.FragmentSize are cut into fragments, each one
// SCTP message with a 13-byte header (see frame.go), and reassembled per
// stream. pion/sctp keeps one receive buffer per association, so on its own a
// stream nobody reads would fill that buffer and stall the others. This
// package therefore drains every SCTP stream into its own queue at once and
// adds per-stream credit-based flow control on top: a sender may have at most
// Config.StreamWindow bytes outstanding on a stream beyond what the receiving
// application has consumed, and waits for credit otherwise. An unread stream
// thus stalls only its own senders.
//
// Send scheduling: pion/sctp accepts any amount of data at once and queues
// it per association, so fragments pass through a scheduler (sched.go) that
// hands pion a fragment only while the bytes pion holds for the data streams
// stay under a limit sized from the path: two fragments plus the estimated
// bandwidth-delay product (the delivery rate times the larger of twice the
// smallest RTT measured and 2 ms), at most pion's congestion window. Of the
// streams waiting for room, the one whose message has the fewest bytes left
// goes first, so a small message passes bulk and of two large messages the
// first begun is sent whole before the other (but the stream that has
// waited longest gets a fragment once it has waited 100 ms, one such
// fragment per 100 ms). Send blocks instead of queueing, where its
// context, Close and Abort can still reach it, and a small message on one
// stream waits behind about one bandwidth-delay product of another stream's
// data rather than a whole credit window.
//
// Congestion control (cc.go): to a peer on another host, Config.CC picks
// the fork's controller (SetCongestionControl): bbr-cubic (the default:
// BBRv1 whose cwnd a CUBIC window bounds once a loss meets a standing
// queue, so that it shares a bottleneck with CUBIC flows), bbr (BBRv1, as
// Linux's), cubic (RFC 9438) or reno (RFC 9260's, standing for several reno flows
// tuned online, flows.go); a peer on this host always gets reno with one
// flow. With a controller other than reno the scheduler's limit follows
// cwnd, which the controller bounds by its model of the path, with a third
// more beyond it so that pion does not run dry between wakeups (bbr would
// read that as the sender having nothing to send).
// docs/congestion-control.md has the measurements behind the default.
//
// Pacing: to a peer on another host, pion sends new data at most at the
// controller's pace: bbr's model's; reno's and cubic's 1.25·cwnd/minRTT
// (twice cwnd/minRTT in slow start), in bursts of a few milliseconds'
// worth (the fork's SetPacing; Config.Unpaced turns it off). When
// both directions carry bulk data, as a job's inputs and results do, each
// side's SACKs queue behind the other's data and arrive in bunches;
// unpaced, each bunch released a burst that overflowed the bottleneck's
// queue while it was half empty.
//
// Slow start: to a peer on another host, reno's and cubic's slow start
// watches the round trip time (HyStart++, RFC 9406, the fork's
// SetHyStart; Config.NoHyStart turns it off). A round whose smallest RTT sample is above the last
// round's by an eighth of it (4 to 16 ms) means the bottleneck's queue is
// filling: the window then grows a quarter as fast for up to five rounds
// (back to slow start if a later round's RTT falls back), and then slow
// start ends, meant to be before the queue overflows. Without it a job's
// slow start (or a warm association's, carried over from the last job)
// ran until the queue dropped packets, and on a clean long path the
// associations of two workers sharing it cut their windows two or three
// times within a second and spent the rest of the job growing back.
//
// Liveness: pion/sctp has no dead-peer detection of its own (its
// retransmissions never give up and it sends no heartbeats unasked). The
// transport's UDP conn wrappers record when the last well-formed datagram
// arrived and when the last one left; an association sends a braid ping (a
// control message) when it has sent nothing, or heard nothing, for a third
// of the negotiated liveness, and in any case once per third for the sake
// of kernel-stack peers, and it aborts with a transport.PeerLostError when
// nothing has arrived for the whole liveness. liveness.go says why the pings
// are braid's and not SCTP HEARTBEATs, and the one gap left with a frozen
// kernel-stack peer.
//
// A peer that breaks the framing (a malformed SCTP packet, a fragment for an
// unknown message, an oversize fragment or message, data beyond its credit,
// data on a stream that was not negotiated) has its association aborted with
// a logged reason; the Listener goes on serving the others.
package sctp

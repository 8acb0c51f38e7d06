// Package ksctp is braid's "sctp" transport over the Linux kernel's SCTP
// stack, driven with raw system calls from golang.org/x/sys/unix (no cgo).
//
// Each association is one one-to-one SCTP socket (SOCK_STREAM,
// IPPROTO_SCTP). Its framing is transport/internal/sctpwire's, the same as
// the userspace stack's (transport/sctp), so either stack can talk to the
// other:
//
//   - SCTP stream 0 is the control stream: the braid handshake, then
//     credit grants and pings. Logical stream s is SCTP stream s+1, so
//     SCTP_INITMSG asks for one stream more than Config.Streams.
//   - A braid message is sent as one or more SCTP messages of at most 60
//     KiB (sendmsg with an SCTP_SNDINFO cmsg choosing the stream), each a
//     fragment with sctpwire's 13-byte header (message id, offset, total,
//     last/abandon flags), so that a 64 MiB unit never needs a 64 MiB
//     socket buffer and a big message on one stream delays the others by at
//     most one fragment. The kernel may hand a fragment over in pieces
//     (partial delivery); the receiver reassembles by stream (SCTP_RCVINFO)
//     until MSG_EOR.
//   - Every SCTP message carries payload protocol id sctpwire.PPID (53).
//
// A dedicated receive goroutine per association drains the socket into
// per-stream queues, so a stream nobody reads cannot stall the others. The
// queues are bounded by sctpwire's credit-based flow control per stream: a
// sender puts a fragment on a stream only within the limit the receiver
// granted, and the receiver raises the limit (cumulative bytes, sent on the
// control stream) as the application consumes messages.
//
// Liveness: the kernel's own SCTP heartbeats are answered by the kernel even
// for a process that is frozen or wedged, so braid keeps its own clock
// (liveness.go). Every piece the receive loop reads is a sign of life; an
// association that has sent nothing for a third of the negotiated liveness
// sends a ping (sctpwire's ping control message, sent only if that needs
// no waiting); and one that has received nothing for the whole liveness is
// aborted with a transport.PeerLostError. The receive loop never waits for
// the application, so a stalled reader cannot hide the peer's pings.
//
// # Kernel and userspace stacks together
//
// The userspace stack speaks SCTP over UDP; the kernel reaches it with
// SCTP-over-UDP encapsulation (RFC 6951), which Linux receives on one UDP
// port per network namespace, the sysctl net.sctp.udp_port (0, the
// default, turns it off). Both stacks read an address host:port as UDP
// port `port` carrying SCTP port `port` (udp.go), so:
//
//   - A kernel-stack Dial with Config.UDP reaches a userspace-stack
//     listener at its address; with Config.UDPFallback it does so after a
//     native attempt brings up no association (ErrNoAssociation). Either
//     needs net.sctp.udp_port set on the dialer's host, and the path MTU of
//     such an association is capped at 8192 bytes, pion's datagram limit.
//   - A kernel-stack listener is reachable by UDP peers exactly when it
//     listens on port net.sctp.udp_port: host:udp_port then serves native
//     SCTP and SCTP over UDP alike (UDPPort reports the port). There can be
//     one such listener per host; any other port serves native SCTP only.
//
// `--sctp-stack auto` (internal/transports) does not depend on the sysctl:
// on a host with kernel SCTP it listens on the same address twice, on UDP
// with the userspace stack and on SCTP with the kernel, and dials natively
// first, falling back to the userspace stack over UDP when no kernel
// association comes up within 2 s. Two kernel hosts then talk natively and
// everything else meets over UDP, so a mixed cluster works under the
// defaults. The encapsulation paths above are for hosts that pin
// `--sctp-stack kernel`.
//
// Config.UDPEncapsPort sends dialed associations over UDP to one fixed
// port instead, which lets the conformance suite cut them with a UDP relay.
//
// Sockets are nonblocking and parked on the Go runtime poller through
// os.File, so context cancellation, Close and Abort unblock all I/O.
//
// Use Available to learn whether the running kernel has SCTP; tests skip
// otherwise (run them with `make vm-test`, which boots a kernel that has it).
// TestInteropPion checks raw interop with pion/sctp, and the Mixed tests
// whole braid associations with the userspace stack, both ways.
package ksctp

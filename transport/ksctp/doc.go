// Package ksctp is braid's "sctp" transport over the Linux kernel's SCTP
// stack, driven with raw system calls from golang.org/x/sys/unix (no cgo).
//
// Each association is one one-to-one SCTP socket (SOCK_STREAM,
// IPPROTO_SCTP). The SCTP stream count is requested with SCTP_INITMSG; braid's
// logical stream s is SCTP stream s. The braid handshake runs on stream 0
// before any data. A message is sent as one or more SCTP messages of at most
// 60 KiB each (sendmsg with an SCTP_SNDINFO cmsg choosing the
// stream, the payload protocol id telling fragment from last fragment), so
// that a 64 MiB unit never needs a 64 MiB socket buffer and a big message on
// one stream delays the others by at most one fragment. The kernel may hand a
// fragment over in pieces (partial delivery); the receiver reassembles by
// stream (SCTP_RCVINFO) until MSG_EOR.
//
// A dedicated receive goroutine per association drains the socket into
// per-stream queues, so a stream nobody reads cannot stall the others. The
// queues are bounded by credit-based flow control per stream: a sender starts
// a message only while it holds credit, and the receiver returns credit as
// the application consumes messages.
//
// Liveness: the kernel's own SCTP heartbeats are answered by the kernel even
// for a process that is frozen or wedged, so braid keeps its own clock
// (liveness.go). Every piece the receive loop reads is a sign of life; an
// association that has sent nothing for a third of the negotiated liveness
// sends a ping (one byte on stream 0 with its own payload protocol id, sent
// only if that needs no waiting); and one that has received nothing for the
// whole liveness is aborted with a transport.PeerLostError. The receive loop
// never waits for the application, so a stalled reader cannot hide the
// peer's pings.
//
// Config.UDPEncapsPort makes dialed associations travel as SCTP over UDP
// (RFC 6951), which also lets the conformance suite cut them with a UDP
// relay.
//
// Sockets are nonblocking and parked on the Go runtime poller through
// os.File, so context cancellation, Close and Abort unblock all I/O.
//
// Use Available to learn whether the running kernel has SCTP; tests skip
// otherwise (run them with `make vm-test`, which boots a kernel that has it).
// Interop with pion/sctp over SCTP-over-UDP (RFC 6951) is tested by TestInteropPion.
package ksctp

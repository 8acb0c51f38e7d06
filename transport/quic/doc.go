// Package quic implements transport.Transport over QUIC (quic-go), the
// modern multi-stream yardstick for braid's SCTP transport.
//
// One QUIC connection carries one association. The dialer's first
// bidirectional QUIC stream is the control stream: it carries the braid
// handshake (2-byte length-prefixed messages) and, at the end, the graceful
// close exchange. Then the dialer opens one long-lived bidirectional QUIC
// stream per logical stream; its first two bytes name the logical index.
// Messages on a stream are a 4-byte big-endian length and the payload.
// QUIC's own per-stream flow control keeps the streams independent; the
// connection window may grow large enough that a few unread streams cannot
// use it up.
//
// Before the braid handshake has authenticated the dialer (which needs
// the TLS handshake to have done so first, see TLS), the listener grants
// it only the control stream (a stream opened earlier ends the
// connection), with a 512 KiB window; the windows grow (quic-go's
// auto-tuning, up to Config.StreamWindow and Config.ConnWindow) only
// afterwards; and it holds at most 256 such connections, TLS handshakes
// under way included, 32 per source address, evicting the oldest first
// and any that sends no braid handshake message within a second of its
// first packet.
//
// # TLS
//
// QUIC requires TLS 1.3, and the transport keys it to the cluster secret
// as tcp, tcpn and sctp over DTLS do (transport/internal/clustertls):
// every holder of the secret derives the same certificate authority;
// each end presents a certificate that authority signed and accepts only
// one that chains to it. Mutual authentication and encryption are one
// step: a listener requires the dialer's certificate, and quic-go
// completes the handshake, the only way to an encrypted stream, only
// once both certificates have checked out. So a peer without the secret
// fails in TLS, before it can open a stream and long before the braid
// handshake or Admit reserves a worker's thread; and a man in the middle
// who terminates TLS with a key of its own is refused by both ends (the
// conformance case Confidentiality/Relay). Such refusals are
// transport.ErrAuth. A listener takes connections as their handshake
// starts (quic-go's early listener) so that its preauth gate bounds the
// handshakes strangers hold open and it can log each refusal.
//
// Why certificates and not a MAC over the TLS exporter in the braid
// handshake, which would also bind that handshake to the TLS session:
// with the exporter a stranger still completes TLS and reaches the braid
// handshake, where only the preauth gate bounds it; with the cluster's
// certificates it gets no further than TLS, as on the other transports,
// and one derivation (clustertls) serves them all. The braid handshake
// still runs inside: it negotiates streams and liveness and proves the
// secret a second time.
//
// Config.RootCAs composes with this: dialers then verify the listener's
// certificate (Config.Certificate, issued by the operator's authority)
// against RootCAs instead of the cluster's authority, while every
// listener still requires the dialer's cluster certificate. An operator
// who sets RootCAs sets Certificate on every listener those dialers
// reach.
//
// # Liveness
//
// QUIC has dead-peer detection of its own, and the transport uses it: each
// side sends keep-alive PINGs (which the peer's QUIC stack acknowledges
// whatever its application does) after a third of its configured liveness L
// (DialConfig.Liveness or ListenConfig.Liveness, normalised by
// transport.NormLiveness) without a packet from the peer, and sets quic-go's
// idle timeout to the other two thirds. quic-go counts the idle timeout from
// the later of the last packet received and the first ack-eliciting packet
// sent after it, which on an idle connection is that PING; so a peer that
// falls silent is given up L after its last packet (sooner, 2L/3 after the
// first unacknowledged packet, while data is being sent). quic-go then
// closes the connection and the association ends with a
// transport.PeerLostError.
//
// QUIC settles the idle timeout in its own handshake, before the braid
// handshake, as the smaller of both sides' values; but quic-go raises a
// peer's advertised value below 5 s to 5 s, so each side's timeout is
// min(own, max(peer's, 5 s)). When both sides configure the same liveness
// (the normal case) each side gives up after the bound the braid handshake
// negotiates; otherwise the side with the larger value may wait longer than
// HandshakeResult.Liveness, at most its own L.
//
// # Close
//
// Close finishes every stream (QUIC FIN) and the control stream, waits for
// the peer to answer with its own FIN on the control stream (sent once its
// readers have taken in everything), then closes the connection. A QUIC
// CONNECTION_CLOSE alone would discard data still in flight.
package quic

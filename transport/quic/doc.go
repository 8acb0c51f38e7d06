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
// Before the braid handshake has authenticated the dialer, the listener
// grants it only the control stream (a stream opened earlier ends the
// connection), with a 512 KiB window; the windows grow (quic-go's
// auto-tuning, up to Config.StreamWindow and Config.ConnWindow) only
// afterwards; and it holds at
// most 256 such connections, 32 per source address, evicting the oldest
// first and any that sends no handshake message within a second.
//
// # TLS
//
// QUIC requires TLS 1.3. A Listener presents Config.Certificate or, by
// default, an ephemeral self-signed certificate generated at Listen. The
// dialer does not verify it unless Config.RootCAs is set: peers are
// authenticated by the braid handshake (an HMAC over fresh nonces with the
// cluster secret), not by a PKI that a batch cluster does not have. TLS
// still encrypts the traffic. The handshake is not bound to the TLS
// session, so without RootCAs an active on-path attacker who can relay the
// handshake could read the association; set RootCAs (and a Certificate on
// the listeners) where that matters.
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

package sctp

import (
	"sync/atomic"
	"time"
)

// Receive coalescing. Across a long path packets arrive spread out (at
// 100 Mbit/s one every 120 µs), so each recvmmsg returned one packet, and
// each packet woke the reader, pion's read loop and its write loop (for a
// SACK every second packet); on the sender each SACK woke them again. That
// was about 60 µs of CPU per packet, most of it the Go scheduler parking
// and waking threads (`braid bench transport --net rtt=20ms,rate=100M`:
// sctp 63 CPU s/GB, tcpn 6). A NIC moderates its interrupts for the same
// reason. So once a read has returned packets but not a full batch (a
// busy, paced flow), the socket's reader (reader.fill) waits until
// `linger` has passed since that read and takes what arrived meanwhile in
// one go; pion handles them in one round and acknowledges them with one
// SACK. A packet after an idle spell is read at once: only a packet that
// follows another within `linger` waits, by at most `linger`.
//
// `linger` is a sixteenth of the path's round-trip time, at most
// maxLinger, and none on a path shorter than 16 × minLinger, where the
// delay would cost more than the wakeups. The round-trip time is what the
// SCTP handshake took (rttClock), or pion's smoothed RTT where that is
// smaller. The handshake's exchanges are answered at once, while pion's
// RTT samples include the peer's delayed SACKs (up to 200 ms for a lone
// packet), so on a quiet short path pion's RTT alone would ask for the
// largest delay. A sealed (DTLS) association times the handshake inside
// DTLS; a listener's socket, which all its associations share, lingers
// as long as the shortest path's association asks for (mux.relinger).

const (
	lingerDiv = 16
	maxLinger = 2 * time.Millisecond
	minLinger = 250 * time.Microsecond // none on paths under 4 ms
)

// lingerFor is the receive coalescing delay for a path whose round-trip
// time is rtt (0: not measured, no delay).
func lingerFor(rtt time.Duration) time.Duration {
	d := min(rtt/lingerDiv, maxLinger)
	if d < minLinger {
		return 0
	}
	return d
}

// rttClock times the SCTP handshake's first exchange on a conn: INIT to
// INIT-ACK when dialing, INIT-ACK to COOKIE-ECHO when listening. A
// retransmission restarts it, so that a late answer to the first INIT
// makes the sample shorter, never longer.
type rttClock struct {
	sentAt atomic.Int64 // when the last INIT or INIT-ACK left, in ns since start
	rtt    atomic.Int64 // ns; 0 until measured
}

var clockStart = time.Now()

// sent looks at a packet on its way out.
func (k *rttClock) sent(p []byte) {
	if len(p) > sctpCommonHeader && k.rtt.Load() == 0 {
		if t := p[sctpCommonHeader]; t == chunkInit || t == chunkInitAck {
			k.sentAt.Store(int64(time.Since(clockStart)))
		}
	}
}

// got looks at a well-formed packet that arrived.
func (k *rttClock) got(p []byte) {
	if len(p) > sctpCommonHeader && k.rtt.Load() == 0 {
		if t := p[sctpCommonHeader]; t == chunkInitAck || t == chunkCookieEcho {
			if s := k.sentAt.Load(); s != 0 {
				k.rtt.CompareAndSwap(0, max(int64(time.Since(clockStart))-s, 1))
			}
		}
	}
}

// get returns the measured round-trip time, or 0.
func (k *rttClock) get() time.Duration { return time.Duration(k.rtt.Load()) }

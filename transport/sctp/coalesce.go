package sctp

import (
	"net"
	"sync/atomic"
	"time"
)

// Receive coalescing. Across a long path packets arrive spread out (at
// 100 Mbit/s one every 120 µs), so each recvmmsg returned one packet, and
// each packet woke the reader, pion's read loop and its write loop (for a
// SACK every second packet); on the sender each SACK woke them again. That
// was about 60 µs of CPU per packet, most of it the Go scheduler parking
// and waking threads (`braid bench transport --net rtt=20ms,rate=100M`,
// 4 streams: sctp 57 CPU s/GB at the ends, tcpn 4–6). A NIC moderates its interrupts for the same
// reason. So once a read has returned packets but not a full batch (a
// busy, paced flow), the socket's reader (reader.fill) waits until
// `linger` has passed since that read and takes what arrived meanwhile in
// one go; pion handles them in one round and acknowledges them with one
// SACK. A packet after an idle spell is read at once: only a packet that
// follows another within `linger` waits, by at most `linger` (plus the
// timer's slack, up to about a millisecond).
//
// `linger` is an eighth of the path's round-trip time in whole
// milliseconds, at most maxLinger: none on a path under 8 ms, where the
// delay would cost more than the wakeups save (and Go's timers, which
// sleep in epoll_wait, round a shorter wait up to a millisecond anyway).
// At 100 Mbit/s and 50 ms a receiver so takes some 34 packets a read (a
// listener's batch is 32) and sends one SACK for them: some 460 SACKs a
// second through the bed, against 840 with the earlier sixteenth and 2
// ms; each costs the receiver a send and the sender a read and a wakeup
// (docs/experiments/sctp-cpu). The cost is up to 4 ms more for what
// follows another packet within the linger (a request's later packets).
// The round-trip time must not be taken too long, since a loopback
// association that lingered would add up to a few milliseconds to every
// request and response, and either sample alone can be: the SCTP
// handshake's exchange (rttClock) includes the peer's scheduling delay
// when it is busy, and pion's RTT samples include the peer's delayed
// SACKs (up to 200 ms for a lone packet). So the path's RTT is the smaller of the
// handshake's and the smallest of pion's samples (MinRTT, patch 14), and
// nothing until both exist; and an association with a peer on this host
// never lingers. A listener's socket, which all its associations share,
// lingers as long as the shortest path's association asks for
// (mux.relinger).

const (
	lingerDiv = 8
	maxLinger = 4 * time.Millisecond
)

// lingerFor is the receive coalescing delay for a path whose round-trip
// time is rtt (0: unknown, no delay).
func lingerFor(rtt time.Duration) time.Duration {
	return min(rtt/lingerDiv, maxLinger).Truncate(time.Millisecond)
}

// pathRTT is the round-trip time to size the delay from: the smaller of
// the handshake's and pion's smallest sample, 0 unless both are known.
func pathRTT(handshake, pionMin time.Duration) time.Duration {
	if handshake <= 0 || pionMin <= 0 {
		return 0
	}
	return min(handshake, pionMin)
}

// nextLinger is the delay to set for a path of round-trip time rtt when
// set is the one set so far (negative: none yet), and whether to set it:
// once the path is measured, and then only to shrink it.
func nextLinger(set, rtt time.Duration) (time.Duration, bool) {
	d := lingerFor(rtt)
	return d, rtt > 0 && (set < 0 || d < set)
}

// isLocal reports whether addr is on this host: a loopback address or
// one of its interfaces'.
func isLocal(addr net.Addr) bool {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return false
	}
	ip := ua.IP
	if ip.IsLoopback() {
		return true
	}
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, ifa := range ifas {
		if n, ok := ifa.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
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

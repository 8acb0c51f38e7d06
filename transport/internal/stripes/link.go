package stripes

import "time"

// LinkSample is what a TCP connection's kernel says of its sending at one
// moment (TCP_INFO on Linux): the counters a striped association's tuner
// reads from each of its connections.
type LinkSample struct {
	// RTT is the smoothed round-trip time, MinRTT the smallest seen.
	RTT, MinRTT time.Duration
	// BytesAcked counts the bytes acknowledged since the connection began.
	BytesAcked uint64
	// Unacked and Cwnd are the packets in flight and the congestion
	// window, NotSent the bytes written and not yet sent.
	Unacked, Cwnd, NotSent uint32
}

// InFlight reports that the connection had data out.
func (s LinkSample) InFlight() bool { return s.Unacked > 0 }

// HeldByCwnd reports that the congestion window held the connection
// back: it is full and bytes wait behind it.
func (s LinkSample) HeldByCwnd() bool { return s.Unacked >= s.Cwnd && s.NotSent > 0 }

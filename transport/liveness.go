package transport

import (
	"errors"
	"fmt"
	"time"
)

// Liveness bounds how long an association trusts a silent peer. Every
// transport keeps each association alive with the cheapest sign of life its
// stack offers (see each transport's package comment) and ends it once
// nothing at all has arrived from the peer for the negotiated liveness: a
// peer killed without a word, frozen (SIGSTOP), cut off by the network or
// gone with its host is noticed on both ends within that bound, where
// kernel keep-alives and SCTP heartbeats answered by a frozen process's
// kernel would not notice at all. On the TCP transports each of an
// association's connections must show signs of life of its own, since one
// cut off alone would hold the streams it carries.
//
// Each side offers its value in the handshake; the association uses the
// smaller one, clamped to [MinLiveness, MaxLiveness]. A zero config value
// means DefaultLiveness.
const (
	DefaultLiveness = 3 * time.Second
	MinLiveness     = 100 * time.Millisecond
	MaxLiveness     = 10 * time.Minute
)

// ErrPeerLost is wrapped, together with ErrPeerClosed, by the error of an
// association that ended because the peer showed no sign of life for the
// liveness bound. Callers that only test for ErrPeerClosed keep working.
var ErrPeerLost = errors.New("transport: peer lost: no sign of life")

// PeerLostError is the error an association ends with when its peer was
// silent for Liveness: errors.Is matches it against both ErrPeerLost and
// ErrPeerClosed.
type PeerLostError struct {
	// Silence is how long nothing had arrived from the peer (on the TCP
	// transports, on the connection named in the error that wraps this
	// one, if there are several) when the association gave up (at least
	// Liveness).
	Silence time.Duration
	// Liveness is the negotiated bound.
	Liveness time.Duration
}

func (e *PeerLostError) Error() string {
	return fmt.Sprintf("%v for %v (liveness %v)", ErrPeerLost, e.Silence.Round(time.Millisecond), e.Liveness)
}

// Unwrap returns ErrPeerLost and ErrPeerClosed.
func (e *PeerLostError) Unwrap() []error { return []error{ErrPeerLost, ErrPeerClosed} }

// NormLiveness returns the liveness a side offers for a configured value:
// DefaultLiveness for zero (or less), otherwise d clamped to
// [MinLiveness, MaxLiveness] and truncated to whole milliseconds (the
// handshake's unit).
func NormLiveness(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultLiveness
	}
	return min(max(d, MinLiveness), MaxLiveness).Truncate(time.Millisecond)
}

// NegotiateLiveness returns the liveness an association uses: the smaller
// of the two offers, each normalised as by NormLiveness.
func NegotiateLiveness(a, b time.Duration) time.Duration {
	return min(NormLiveness(a), NormLiveness(b))
}

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

// An association's idle bound, on the transports that implement it (the
// TCP ones), is its liveness bound times an idle factor that each side
// offers in the handshake (the smaller one wins; 0 from either side, or a
// peer older than idle factors, means none). A side whose association has
// carried nothing for the liveness bound, and has no work under way for
// the peer (see Busy), says so in its pings and then pings every half idle
// bound; its peer takes it for lost after the idle bound of silence, and
// after the liveness bound again as soon as it sends it anything.
const (
	DefaultIdleFactor = 10
	MaxIdleFactor     = 15
)

// normIdleFactor is the idle factor offered for a configured one: 0 for 0
// or less, or 1 (an idle bound no longer than the liveness bound is no
// idle bound), otherwise at most MaxIdleFactor.
func normIdleFactor(f int) int {
	if f < 2 {
		return 0
	}
	return min(f, MaxIdleFactor)
}

// Busier is implemented by the associations that watch a quiet peer with
// the idle bound. Busy says that the caller has work under way for the
// peer, such as a unit it is running, whose loss the peer must notice
// within the liveness bound and not the idle bound: until release is
// called, this side announces no idle, and leaves idle at once if it had.
// Release may be called more than once; only the first counts.
type Busier interface {
	Busy() (release func())
}

// Busy holds a busy if it is a Busier, and returns its release; for other
// associations, which have no idle bound, release does nothing.
func Busy(a Association) (release func()) {
	if b, ok := a.(Busier); ok {
		return b.Busy()
	}
	return func() {}
}

// Watched is implemented by the associations that end on their own once
// the peer has been silent for longer than a bound (all of braid's do;
// those that can say the bounds implement this). SilenceBounds reports
// them: quiet is the longest a peer with nothing under way may be silent
// (the idle bound, where one was negotiated, else the liveness bound),
// sent the longest it may be silent after this side sent it a message (the
// liveness bound). Both are 0 if the association keeps no watch. So an
// association still open sent+ε after a send heard from a peer that was
// alive when the message arrived: the server takes a live association for
// a worker's sign of life (docs/transports.md, "Idle associations").
type Watched interface {
	SilenceBounds() (quiet, sent time.Duration)
}

// SilenceBounds reports a's bounds if it, or an association it wraps
// (Unwrap), is Watched; 0, 0 otherwise.
func SilenceBounds(a Association) (quiet, sent time.Duration) {
	for a != nil {
		if w, ok := a.(Watched); ok {
			return w.SilenceBounds()
		}
		u, ok := a.(interface{ Unwrap() Association })
		if !ok {
			break
		}
		a = u.Unwrap()
	}
	return 0, 0
}

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

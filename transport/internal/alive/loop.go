package alive

import (
	"time"

	"github.com/braidhq/braid/transport"
)

// Loop is one association's keep-alive loop. Its fields are set before Run
// and not changed after.
type Loop struct {
	// Bound is the negotiated liveness: the peer is lost once nothing has
	// been heard from it for this long. It must be positive.
	Bound time.Duration
	// Clock is the association's clock; the transport's I/O paths call its
	// Heard and Sent.
	Clock *Clock
	// Ping sends a sign of life to the peer without waiting: a transport
	// whose link is busy sends nothing (the traffic is the sign of life).
	// Run calls it when nothing was sent for a third of Bound (and, with
	// PingWhenSilent, when nothing was heard for a third of Bound), at most
	// once per third. Ping records what it sends with Clock.Sent, unless
	// the transport's write path does.
	Ping func()
	// PingWhenSilent makes Run ping also when the peer has been silent for a
	// third of Bound, for stacks whose ping the peer's stack answers.
	PingWhenSilent bool
	// Stalled, if set, reports that the local side is not reading what the
	// peer sends (a receive goroutine waits for the application); the
	// silence clock is suspended meanwhile and restarts when it resumes.
	Stalled func() bool
	// Lost is called, from Run, once the silence reaches Bound; Run then
	// returns. It must not wait for Run to return.
	Lost func(*transport.PeerLostError)
}

// Run runs the loop until stop is closed or the peer is lost.
func (l *Loop) Run(stop <-chan struct{}) {
	third := l.Bound / 3
	t := time.NewTimer(third)
	defer t.Stop()
	var nextPing time.Duration // no ping before this Clock reading
	for {
		select {
		case <-t.C:
		case <-stop:
			return
		}
		now := l.Clock.Now()
		// Ask Stalled before reading the silence: a reader that resumes
		// calls Heard before it stops counting as stalled.
		if l.Stalled != nil && l.Stalled() {
			l.Clock.Heard()
		}
		silence := now - l.Clock.LastRecv()
		if silence >= l.Bound {
			l.Lost(&transport.PeerLostError{Silence: silence, Liveness: l.Bound})
			return
		}
		if l.pingDue(now, silence) && now >= nextPing {
			l.Ping()
			nextPing = now + third
		}
		t.Reset(l.sleep(now, nextPing))
	}
}

func (l *Loop) pingDue(now, silence time.Duration) bool {
	third := l.Bound / 3
	return now-l.Clock.LastSend() >= third || (l.PingWhenSilent && silence >= third)
}

// sleep is how long Run may wait before it has something to do: until the
// silence would reach Bound or a ping would be due, but at least a
// twentieth of Bound, so that a ping that cannot go out costs no busy loop.
func (l *Loop) sleep(now, nextPing time.Duration) time.Duration {
	third := l.Bound / 3
	due := l.Clock.LastRecv() + l.Bound
	due = min(due, max(l.Clock.LastSend()+third, nextPing))
	if l.PingWhenSilent {
		due = min(due, max(l.Clock.LastRecv()+third, nextPing))
	}
	return max(due-now, l.Bound/20)
}

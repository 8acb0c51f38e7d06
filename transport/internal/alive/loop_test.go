package alive

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/braidhq/braid/transport"
)

const bound = 3 * time.Second

// side is one end of a simulated association: its clock and loop, with
// the count of pings it sent and when its peer was declared lost.
type side struct {
	clock  Clock
	loop   Loop
	pings  atomic.Int64
	lostAt atomic.Int64 // clock reading at Lost, or -1
	err    *transport.PeerLostError
	done   chan struct{}
}

// newSide starts a loop whose pings reach peer (if non-nil) at once.
func newSide(peer func() *side, silentToo bool) *side {
	s := &side{done: make(chan struct{})}
	s.lostAt.Store(-1)
	s.clock.Start()
	s.loop = Loop{Bound: bound, Clock: &s.clock, PingWhenSilent: silentToo,
		Ping: func() {
			s.pings.Add(1)
			s.clock.Sent()
			if p := peer(); p != nil {
				p.clock.Heard()
			}
		},
		Lost: func(e *transport.PeerLostError) {
			s.err = e
			s.lostAt.Store(int64(s.clock.Now()))
		},
	}
	return s
}

func (s *side) run(stop chan struct{}) {
	go func() {
		defer close(s.done)
		s.loop.Run(stop)
	}()
}

// TestIdlePeersStayAlive: two idle ends keep each other alive with about
// three pings per bound each.
func TestIdlePeersStayAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a, b *side
		a = newSide(func() *side { return b }, false)
		b = newSide(func() *side { return a }, false)
		stop := make(chan struct{})
		a.run(stop)
		b.run(stop)
		time.Sleep(100 * bound)
		close(stop)
		<-a.done
		<-b.done
		for _, s := range []*side{a, b} {
			if s.lostAt.Load() >= 0 {
				t.Fatalf("peer declared lost at %v: %v", time.Duration(s.lostAt.Load()), s.err)
			}
			if n := s.pings.Load(); n < 250 || n > 350 {
				t.Errorf("%d pings in 100 bounds, want about 300", n)
			}
		}
	})
}

// TestSilentPeerIsLost: a peer that never answers is lost after the bound,
// not before, and the error says how long it was silent.
func TestSilentPeerIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSide(func() *side { return nil }, true)
		s.run(make(chan struct{}))
		<-s.done
		at := time.Duration(s.lostAt.Load())
		if at < bound || at > bound+bound/20 {
			t.Errorf("lost at %v, want within [%v, %v]", at, bound, bound+bound/20)
		}
		if s.err.Silence != at || s.err.Liveness != bound {
			t.Errorf("error %+v, want silence %v and liveness %v", s.err, at, bound)
		}
		if !errors.Is(s.err, transport.ErrPeerLost) || !errors.Is(s.err, transport.ErrPeerClosed) {
			t.Errorf("error %v does not wrap ErrPeerLost and ErrPeerClosed", s.err)
		}
		if n := s.pings.Load(); n < 2 || n > 3 {
			t.Errorf("%d pings before giving up, want 2 or 3", n)
		}
	})
}

// TestTrafficIsLife: a side that keeps sending and hearing sends no pings.
func TestTrafficIsLife(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSide(func() *side { return nil }, true)
		stop := make(chan struct{})
		s.run(stop)
		for range 100 {
			time.Sleep(bound / 10)
			s.clock.Sent()
			s.clock.Heard()
		}
		close(stop)
		<-s.done
		if n := s.pings.Load(); n != 0 || s.lostAt.Load() >= 0 {
			t.Errorf("%d pings, lost at %v; want none", n, time.Duration(s.lostAt.Load()))
		}
	})
}

// TestSilentWhileSending: with PingWhenSilent, a side that sends but hears
// nothing still pings (so that a peer's stack can answer), once per third.
func TestSilentWhileSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSide(func() *side { return nil }, true)
		stop := make(chan struct{})
		s.run(stop)
		for range 9 {
			time.Sleep(bound / 10)
			s.clock.Sent()
		}
		if n := s.pings.Load(); n != 2 {
			t.Errorf("%d pings after %v of silence, want 2", n, 9*bound/10)
		}
		<-s.done
	})
}

// TestStalledSuspendsSilence: while the local reader is stalled the peer is
// not declared lost however long the silence; once it resumes, the bound
// counts from then.
func TestStalledSuspendsSilence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSide(func() *side { return nil }, false)
		var stalled atomic.Bool
		stalled.Store(true)
		s.loop.Stalled = stalled.Load
		s.run(make(chan struct{}))
		time.Sleep(10 * bound)
		if s.lostAt.Load() >= 0 {
			t.Fatalf("lost at %v while stalled", time.Duration(s.lostAt.Load()))
		}
		resumed := s.clock.Now()
		s.clock.Heard() // what a resuming reader does
		stalled.Store(false)
		<-s.done
		if at := time.Duration(s.lostAt.Load()); at < resumed+bound || at > resumed+bound+bound/20 {
			t.Errorf("lost at %v, want %v after resuming at %v", at, bound, resumed)
		}
		// A ping that goes nowhere costs at most one call per third.
		if n := s.pings.Load(); n > 3*11+1 {
			t.Errorf("%d pings in 11 bounds, want at most 3 per bound", n)
		}
	})
}

package mux

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// The idle tests check the idle bound (liveness.go, "Idle links") on the
// bubble's clock, as the other liveness tests do.

const testIdle = 10 * testLiveness

// tapConn counts the pings written through it, and drops every write once
// frozen: its side then looks frozen to the peer (a process stopped, whose
// kernel still holds the connection), while the side itself runs on.
type tapConn struct {
	Conn
	pings, idlePings atomic.Int64
	frozen           atomic.Bool
}

func (c *tapConn) Write(p []byte) (int, error) {
	if c.frozen.Load() {
		return len(p), nil
	}
	switch {
	case bytes.Equal(p, pingFrame):
		c.pings.Add(1)
	case bytes.Equal(p, idlePingFrame):
		c.idlePings.Add(1)
	}
	return c.Conn.Write(p)
}

// idlePair is livePair with the test idle bound: two associations over
// links memPair links, each link of each side tapped. b starts a
// sixteenth of the liveness bound after a, so that the two sides'
// keep-alive loops never look at the links at the same instant of the
// bubble's clock: which of two goroutines woken at one instant runs first
// is up to the scheduler, and a ping read just as the reader's own side
// looks keeps that side's link from announcing idle (goIdle) until its
// next ping.
func idlePair(t *testing.T, streams, links int, striped bool) (a, b *Assoc, ta, tb []*tapConn) {
	t.Helper()
	var ca, cb []Conn
	for range links {
		x, y := memPair()
		tx, ty := &tapConn{Conn: x}, &tapConn{Conn: y}
		ta, tb = append(ta, tx), append(tb, ty)
		ca, cb = append(ca, tx), append(cb, ty)
	}
	cfg := idleConfig(streams)
	cfg.Striped = striped
	a = New(ca, cfg)
	time.Sleep(testLiveness / 16)
	b = New(cb, cfg)
	t.Cleanup(func() { a.Abort(nil); b.Abort(nil) })
	return a, b, ta, tb
}

func idleConfig(streams int) Config {
	return Config{Streams: streams, QueueBytes: 256 << 10, CloseTimeout: time.Second, Liveness: testLiveness,
		WatchEach: true, IdleLiveness: testIdle, PartialBytes: 256 << 10}
}

// wantLostAt checks that a ended with a PeerLostError under bound, at
// when (measured from start) or within the keep-alive's next look, an
// eighth of the liveness bound, after it.
func wantLostAt(t *testing.T, a *Assoc, start time.Time, when, bound time.Duration) {
	t.Helper()
	waitEnd(t, a, when+testIdle)
	took := time.Since(start)
	var lost *transport.PeerLostError
	if err := a.Err(); !errors.As(err, &lost) {
		t.Fatalf("Err() = %v, want a PeerLostError", err)
	}
	if lost.Liveness != bound || took < when || took > when+testLiveness/8 {
		t.Errorf("lost after %v under a bound of %v (silence %v); want at %v under %v",
			took, lost.Liveness, lost.Silence, when, bound)
	}
}

// TestIdleAssociationPingsRarely: an association that carries nothing
// pings each link every half liveness bound until it has been quiet for
// the bound, then announces idle and pings every half idle bound: in 40
// liveness bounds, a ping (at half a bound) and 8 idle pings (at 1, 6,
// ..., 36) a link and side, where it used to be 80 pings. Both sides stay up, and a message still goes through.
func TestIdleAssociationPingsRarely(t *testing.T) {
	for _, tc := range linkShapes {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b, ta, tb := idlePair(t, 2, tc.links, tc.striped)
				const bounds = 40
				time.Sleep(bounds * testLiveness)
				synctest.Wait()
				wantAlive(t, a, b)
				for i, c := range append(ta, tb...) {
					if n, idle := c.pings.Load(), c.idlePings.Load(); n != 1 || idle != 8 {
						t.Errorf("link %d: %d pings and %d idle pings in %d liveness bounds, want 1 and 8", i, n, idle, bounds)
					}
				}
				wantCarries(t, a, b)
			})
		})
	}
}

// TestIdlePeerSilentIsLostAtIdleBound: a peer that announced idle and
// then went silent (frozen, cut off) is lost after the idle bound of
// silence, not before, under the idle bound.
func TestIdlePeerSilentIsLostAtIdleBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mine, raw := memPair()
		start := time.Now()
		a := New([]Conn{mine}, idleConfig(1))
		defer a.Abort(nil)
		if _, err := raw.Write(idlePingFrame); err != nil {
			t.Fatal(err)
		}
		time.Sleep(testIdle - testLiveness/8)
		wantAlive(t, a)
		wantLostAt(t, a, start, testIdle, testIdle)
	})
}

// TestSendToIdlePeer: a message written to a peer that announced idle is
// answered at once by a live peer (it leaves idle on reading it), so a
// peer that then stays silent is lost within the liveness bound of the
// write, not the idle bound: whether the message went out after the idle
// ping arrived, or just before (the ping crossed it, written before the
// peer read the message), and whether the writer was idle itself or busy
// (pinging on the liveness schedule).
func TestSendToIdlePeer(t *testing.T) {
	for _, tc := range []struct {
		name           string
		crossing, busy bool
	}{{"after the idle ping", false, false}, {"crossing the idle ping", true, false}, {"busy writer", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mine, raw := memPair()
				start := time.Now()
				a := New([]Conn{mine}, idleConfig(1))
				defer a.Abort(nil)
				if tc.busy {
					defer a.Busy()()
				}
				go drain(raw)
				if !tc.crossing {
					raw.Write(idlePingFrame)
				} else {
					stop := make(chan struct{})
					go pingEvery(raw, testLiveness/5, stop)
					time.Sleep(2 * testLiveness)
					close(stop)
				}
				time.Sleep(2*testLiveness + testLiveness/4 - time.Since(start))
				if err := a.Send(context.Background(), 0, []byte("unit")); err != nil {
					t.Fatal(err)
				}
				sent := time.Since(start)
				if tc.crossing {
					time.Sleep(testLiveness / 4)
					raw.Write(idlePingFrame)
				}
				wantLostAt(t, a, start, sent+testLiveness, testLiveness)
			})
		})
	}
}

// pingedIdleSide is an association with the test idle bound whose peer,
// raw, pings it often (so that only this side goes idle), and the headers
// of the frames it writes to raw.
func pingedIdleSide(t *testing.T) (a *Assoc, raw Conn, frames <-chan frame.Header) {
	mine, raw := memPair()
	a = New([]Conn{mine}, idleConfig(1))
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); a.Abort(nil) })
	go pingEvery(raw, testLiveness/5, stop)
	return a, raw, frameHeaders(raw)
}

// frameHeaders reads frames from c until it fails, and hands on their
// headers.
func frameHeaders(c Conn) <-chan frame.Header {
	frames := make(chan frame.Header, 100)
	go func() {
		r := frame.NewReader(c, 1)
		for {
			h, _, err := r.Next()
			if err != nil {
				return
			}
			frames <- h
		}
	}()
	return frames
}

// wantPingAtOnce checks that the next frame is a ping on the liveness
// schedule, and comes at once: within the keep-alive's next look, an
// eighth of the liveness bound.
func wantPingAtOnce(t *testing.T, frames <-chan frame.Header) {
	t.Helper()
	left := time.Now()
	select {
	case h := <-frames:
		if h.Type != frame.Ping || h.Flags != 0 || time.Since(left) > testLiveness/8 {
			t.Errorf("after leaving idle: %+v %v later, want a ping at once", h, time.Since(left))
		}
	case <-time.After(testLiveness):
		t.Error("no frame within the liveness bound of leaving idle")
	}
}

// dataFrame is msg as one Data frame on stream 0.
func dataFrame(msg []byte) []byte {
	h := frame.Header{Type: frame.Data, Len: uint32(len(msg)), MsgLen: uint32(len(msg)), Flags: frame.FlagEnd}
	return append(h.Append(nil), msg...)
}

// drain reads c until it fails.
func drain(c Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// TestDataLeavesIdle: a side that announced idle and then reads a
// message pings at once, on the liveness schedule, not half an idle bound
// after its idle ping: the peer waits only the liveness bound for it.
func TestDataLeavesIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, raw, frames := pingedIdleSide(t)
		time.Sleep(3 * testLiveness)
		synctest.Wait()
		var last frame.Header
		for len(frames) > 0 {
			last = <-frames
		}
		if last.Type != frame.Ping || last.Flags != frame.FlagIdle {
			t.Fatalf("after 3 quiet liveness bounds the last frame was %+v, want an idle ping", last)
		}
		if _, err := raw.Write(dataFrame([]byte("unit"))); err != nil {
			t.Fatal(err)
		}
		wantPingAtOnce(t, frames)
	})
}

// TestBusyPeerFrozenIsLostAtLiveness: a side with work under way for the
// peer (Busy: a unit it is running) announces no idle, however long it
// has been quiet, and leaves idle at once if it had: frozen then, it is
// lost within the liveness bound. Without Busy the same freeze waits out
// the idle bound.
func TestBusyPeerFrozenIsLostAtLiveness(t *testing.T) {
	for _, busy := range []bool{true, false} {
		name := "busy"
		if !busy {
			name = "not busy"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b, _, tb := idlePair(t, 2, 2, false)
				time.Sleep(3 * testLiveness) // both sides idle by now
				if busy {
					defer b.Busy()()
				}
				time.Sleep(2 * testLiveness) // long enough to go idle again
				for _, c := range tb {
					c.frozen.Store(true)
				}
				frozen := time.Now()
				if busy {
					// b's last ping went out at most half the bound ago.
					waitEnd(t, a, testLiveness+testLiveness/8)
				} else {
					time.Sleep(2 * testLiveness)
					wantAlive(t, a)
					waitEnd(t, a, testIdle)
				}
				var lost *transport.PeerLostError
				if err := a.Err(); !errors.As(err, &lost) {
					t.Fatalf("Err() = %v after %v, want a PeerLostError; b: %v", err, time.Since(frozen), b.Err())
				}
			})
		})
	}
}

// TestIdlePingUnnegotiated: an idle ping on an association whose peer
// offered no idle bound is a protocol violation.
func TestIdlePingUnnegotiated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mine, raw := memPair()
		cfg := idleConfig(1)
		cfg.IdleLiveness = 0
		a := New([]Conn{mine}, cfg)
		defer a.Abort(nil)
		go drain(raw)
		raw.Write(idlePingFrame)
		waitEnd(t, a, testLiveness)
		if err := a.Err(); !errors.Is(err, transport.ErrProtocol) {
			t.Errorf("Err() = %v, want ErrProtocol", err)
		}
	})
}

// TestLeaveIdleRightAfterIdlePing: a side that reads a message, or takes
// a Busy, a moment after its idle ping went out pings at once (within the
// keep-alive's wakeup), not half a liveness bound later: until then the
// peer, whose last frame from it was the idle ping, waits the idle bound.
func TestLeaveIdleRightAfterIdlePing(t *testing.T) {
	for _, how := range []string{"message", "busy"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, raw, frames := pingedIdleSide(t)
				for h := range frames { // the idle ping, a liveness bound in
					if h.Type == frame.Ping && h.Flags == frame.FlagIdle {
						break
					}
				}
				if how == "busy" {
					defer a.Busy()()
				} else {
					if _, err := raw.Write(dataFrame([]byte("unit"))); err != nil {
						t.Fatal(err)
					}
				}
				wantPingAtOnce(t, frames)
			})
		})
	}
}

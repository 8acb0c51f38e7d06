package mux

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// The liveness tests run in testing/synctest bubbles over memPair links:
// what they check is timer logic (who pings when, who is declared lost
// after how long), and on the bubble's clock it is checked exactly, however
// busy the machine is; over loopback TCP with a 300 ms bound, a goroutine
// left unscheduled for that long made a live peer look dead, or an idle
// writer of a busy link. The transports' conformance suite runs the same
// rules over real sockets with bounds made for a loaded machine.

const testLiveness = 300 * time.Millisecond

// realLiveness is the bound of the shapes that run over loopback TCP in
// real time. Each end pings every half bound, so a live peer is taken for
// lost once the process is starved of the CPU for about half of it: with
// a 1 s bound, a striped TestStalledReaderIsNotLost failed once in 15
// runs beside two CPU hogs (load 10): the sender's side ended the
// association 0.7 s into the drain, the reader's Recv failing on a reset
// link. 2 s is the conformance suite's bound for the cases whose peer is
// alive (transporttest's aliveBound), for the same reason.
const realLiveness = 2 * time.Second

// linkShapes are the ways an association uses its links: one for all
// streams (tcp), one per stream (tcpn), and three striped (ptcp).
var linkShapes = []struct {
	name    string
	links   int
	striped bool
}{{"one link", 1, false}, {"link per stream", 2, false}, {"striped", 3, true}}

// livePair returns two associations over links memPair links (1 for all
// streams, or one per stream, or striped) with the test liveness; call it
// in a bubble.
func livePair(t *testing.T, streams, links int, striped bool) (a, b *Assoc) {
	t.Helper()
	return livePairOver(t, memConns, streams, links, striped, testLiveness)
}

// livePairOver is livePair over the links pair makes, with the bound given.
func livePairOver(t *testing.T, pair func(*testing.T) (Conn, Conn), streams, links int, striped bool, liveness time.Duration) (a, b *Assoc) {
	t.Helper()
	var ca, cb []Conn
	for range links {
		x, y := pair(t)
		ca, cb = append(ca, x), append(cb, y)
	}
	cfg := Config{Streams: streams, QueueBytes: 256 << 10, CloseTimeout: time.Second, Liveness: liveness, WatchEach: true,
		Striped: striped, PartialBytes: 256 << 10}
	a, b = New(ca, cfg), New(cb, cfg)
	t.Cleanup(func() { a.Abort(nil); b.Abort(nil) })
	return a, b
}

func memConns(*testing.T) (Conn, Conn) { return memPair() }

func tcpConns(t *testing.T) (Conn, Conn) { return tcpPair(t) }

func waitEnd(t *testing.T, a *Assoc, d time.Duration) {
	t.Helper()
	select {
	case <-a.Done():
	case <-time.After(d):
		t.Fatalf("association still open after %v", d)
	}
}

func wantAlive(t *testing.T, as ...*Assoc) {
	t.Helper()
	for i, a := range as {
		select {
		case <-a.Done():
			t.Fatalf("association %d ended: %v", i, a.Err())
		default:
		}
	}
}

// wantCarries checks that a message still goes from a to b on stream 1.
func wantCarries(t *testing.T, a, b *Assoc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Send(ctx, 1, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if m, err := b.Recv(ctx, 1); err != nil || string(m) != "still here" {
		t.Fatalf("Recv = %q, %v", m, err)
	}
}

// TestIdleAssociationStaysUp: two idle ends ping each other on every link
// and stay up for many liveness periods: with one link, a link per stream,
// and three links striped.
func TestIdleAssociationStaysUp(t *testing.T) {
	for _, tc := range linkShapes {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := livePair(t, 2, tc.links, tc.striped)
				time.Sleep(20 * testLiveness)
				wantAlive(t, a, b)
				wantCarries(t, a, b)
			})
		})
	}
}

// TestSilentPeerIsLost: a peer whose kernel keeps the connection open but
// that sends nothing (a frozen process) is declared lost, after the bound
// and within the next tick of the keep-alive loop; meanwhile it was sent
// pings, pending calls fail with the loss, and release runs once.
func TestSilentPeerIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mine, raw := memPair()
		var released atomic.Int32
		start := time.Now()
		a := New([]Conn{mine}, Config{Streams: 1, QueueBytes: 1 << 20, CloseTimeout: time.Second,
			Liveness: testLiveness, Release: func() { released.Add(1) }})
		recvErr := make(chan error, 1)
		go func() { _, err := a.Recv(context.Background(), 0); recvErr <- err }()
		waitEnd(t, a, 10*testLiveness)
		took := time.Since(start)
		err := a.Err()
		var lost *transport.PeerLostError
		if !errors.Is(err, transport.ErrPeerLost) || !errors.Is(err, transport.ErrPeerClosed) || !errors.As(err, &lost) {
			t.Fatalf("Err() = %v, want a PeerLostError (ErrPeerLost and ErrPeerClosed)", err)
		}
		if took < testLiveness || lost.Silence < testLiveness || took > testLiveness+testLiveness/8 {
			t.Errorf("declared lost after %v (silence %v), want within a tick (%v) after the bound %v",
				took, lost.Silence, testLiveness/8, testLiveness)
		}
		if rerr := <-recvErr; !errors.Is(rerr, transport.ErrPeerLost) {
			t.Errorf("pending Recv = %v, want ErrPeerLost", rerr)
		}
		if err := a.Send(context.Background(), 0, []byte("x")); !errors.Is(err, transport.ErrPeerLost) {
			t.Errorf("Send after the loss = %v, want ErrPeerLost", err)
		}
		if released.Load() != 1 {
			t.Errorf("release ran %d times, want 1", released.Load())
		}
		got, _ := io.ReadAll(raw)
		if len(got) < 2*frame.HeaderLen || !bytes.Equal(got[:frame.HeaderLen], pingFrame) {
			t.Errorf("peer read %x, want at least two pings", got)
		}
	})
}

// pingEvery writes a ping on c every period until stop is closed.
func pingEvery(c Conn, period time.Duration, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(period):
			c.Write(pingFrame)
		}
	}
}

// TestSilentLinkIsLost: one link of two goes silent (a failed path) while
// the peer keeps pinging on the other. The association must end all the
// same, naming the silent link: striped, that link's blocks would hold
// their streams for ever. Meanwhile the silent link, idle on our side, is
// pinged like the other. With a peer older than that rule (WatchEach
// false), which pings one idle link only, the association stays up.
func TestSilentLinkIsLost(t *testing.T) {
	for _, tc := range []struct {
		name               string
		striped, watchEach bool
	}{{"link per stream", false, true}, {"striped", true, true}, {"older peer", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m0, r0 := memPair()
				m1, r1 := memPair()
				a := New([]Conn{m0, m1}, Config{Streams: 2, Striped: tc.striped, QueueBytes: 1 << 20, CloseTimeout: time.Second,
					Liveness: testLiveness, WatchEach: tc.watchEach})
				defer a.Abort(nil)
				stop := make(chan struct{})
				go pingEvery(r0, testLiveness/5, stop)
				defer close(stop)
				if !tc.watchEach {
					time.Sleep(20 * testLiveness)
					wantAlive(t, a)
					return
				}
				waitEnd(t, a, 10*testLiveness)
				var lost *transport.PeerLostError
				if err := a.Err(); !errors.As(err, &lost) || !strings.Contains(err.Error(), "connection 2 of 2") {
					t.Fatalf("Err() = %v, want a PeerLostError for connection 2 of 2", err)
				}
				got, _ := io.ReadAll(r1)
				if len(got) < frame.HeaderLen || !bytes.Equal(got[:frame.HeaderLen], pingFrame) {
					t.Errorf("the silent link's peer read %x, want pings", got)
				}
			})
		})
	}
}

// TestOlderPeerClosesOneLinkThenDies: with an older peer (WatchEach
// false) silence is judged over the association, but a link the peer has
// closed no longer counts: a peer that closed one link and then went silent
// is still noticed.
func TestOlderPeerClosesOneLinkThenDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m0, r0 := memPair()
		m1, _ := memPair()
		a := New([]Conn{m0, m1}, Config{Streams: 2, QueueBytes: 1 << 20, CloseTimeout: time.Second, Liveness: testLiveness})
		defer a.Abort(nil)
		if _, err := r0.Write(frame.Header{Type: frame.Close}.Append(nil)); err != nil {
			t.Fatal(err)
		}
		waitEnd(t, a, 10*testLiveness)
		if err := a.Err(); !errors.Is(err, transport.ErrPeerLost) && !errors.Is(err, transport.ErrPeerClosed) {
			t.Fatalf("Err() = %v", err)
		}
		t.Logf("ended: %v", a.Err())
	})
}

// TestBusyLinkSendsNoPings: traffic is the sign of life; a side that keeps
// sending, a frame every tenth of the bound, adds no ping frames, while an
// idle side pings (the peer's pings keep the association up).
func TestBusyLinkSendsNoPings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, raw := pingedAssoc(t)
		frames := make(chan frame.Type, 1000)
		go func() {
			defer close(frames)
			r := frame.NewReader(raw, 1)
			for {
				h, _, err := r.Next()
				if err != nil {
					return
				}
				frames <- h.Type
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		count := func(n int, idle time.Duration) (data, pings int) {
			for range n {
				if err := a.Send(ctx, 0, []byte("data")); err != nil {
					t.Fatal(err)
				}
				time.Sleep(idle)
				synctest.Wait() // the reader has read all that was written
				for len(frames) > 0 {
					if <-frames == frame.Ping {
						pings++
					} else {
						data++
					}
				}
			}
			return data, pings
		}
		if data, pings := count(30, testLiveness/10); data != 30 || pings != 0 {
			t.Fatalf("a busy association sent %d pings with its %d data frames", pings, data)
		}
		// The same association with pauses longer than half the bound
		// pings in them: the check above can fail.
		if data, pings := count(3, testLiveness*3/4); data != 3 || pings == 0 {
			t.Fatalf("an association idle for three quarters of the bound between frames sent %d pings with its %d data frames", pings, data)
		}
	})
}

// pingedAssoc is an association of one link whose peer, raw, pings it every
// fifth of the bound and reads nothing until the caller does; both end
// with the test.
func pingedAssoc(t *testing.T) (*Assoc, *memConn) {
	mine, raw := memPair()
	a := New([]Conn{mine}, Config{Streams: 1, QueueBytes: 1 << 20, CloseTimeout: time.Second, Liveness: testLiveness})
	stop := make(chan struct{})
	go pingEvery(raw, testLiveness/5, stop)
	t.Cleanup(func() {
		close(stop)
		a.Abort(nil)
	})
	return a, raw
}

// TestIdleLinkPingsEveryHalf: an idle link carries one ping a half bound
// from each side, no more: with 10,000 idle workers the server's pings
// are most of what it does. The old loop pinged every quarter (here, on
// the bubble's exact clock; every three eighths on a real one).
func TestIdleLinkPingsEveryHalf(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, raw := pingedAssoc(t)
		var pings atomic.Int64
		go func() {
			r := frame.NewReader(raw, 1)
			for {
				h, _, err := r.Next()
				if err != nil {
					return
				}
				if h.Type == frame.Ping {
					pings.Add(1)
				}
			}
		}()
		const bounds = 30
		time.Sleep(bounds * testLiveness)
		synctest.Wait()
		wantAlive(t, a)
		if n := pings.Load(); n < 2*bounds-1 || n > 2*bounds {
			t.Errorf("%d pings in %d liveness bounds, want 2 a bound (%d)", n, bounds, 2*bounds)
		}
	})
}

// TestStalledReaderIsNotLost: one side floods a stream the other does not
// read, for many liveness periods, so that the reader's receive
// goroutine blocks on a full queue and the sender's writes block on flow
// control. Neither side may declare the other lost, and everything arrives
// once the reader resumes. Runs with one link (tcp), a link per stream
// (tcpn), and three links striped (ptcp), where one link's reader waits
// for queue space and the others for room to hold the blocks that came
// ahead of their turn.
//
// Striped, the other links' readers wait for the first on a mutex, which
// a bubble does not count as durably blocked, so its clock would stand
// still: that shape runs over loopback TCP in real time, with realLiveness,
// stalled for three bounds.
func TestStalledReaderIsNotLost(t *testing.T) {
	for _, tc := range linkShapes {
		t.Run(tc.name, func(t *testing.T) {
			if tc.striped {
				a, b := livePairOver(t, tcpConns, 2, tc.links, true, realLiveness)
				stalledReader(t, a, b, 3*realLiveness)
				return
			}
			synctest.Test(t, func(t *testing.T) {
				a, b := livePair(t, 2, tc.links, false)
				stalledReader(t, a, b, 20*testLiveness)
			})
		})
	}
}

// stalledReader floods stream 0 of a while b reads nothing for stall, then
// reads it all.
func stalledReader(t *testing.T, a, b *Assoc, stall time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := make([]byte, 64<<10)
	stop := make(chan struct{})
	sent := make(chan int, 1)
	go func() {
		n := 0
		defer func() { sent <- n }()
		for {
			select {
			case <-stop:
				a.Send(ctx, 0, nil) // the end mark: the reader knows when to stop
				return
			default:
			}
			if a.Send(ctx, 0, msg) != nil {
				return
			}
			n++
		}
	}()
	time.Sleep(stall)
	wantAlive(t, a, b)
	close(stop)
	// Not "read until the sender says how many": the reader could
	// be waiting for a message the sender never sends.
	got := 0
	for {
		m, err := b.Recv(ctx, 0)
		if err != nil {
			t.Fatalf("message %d: %v (a: %v; b: %v)", got, err, a.Err(), b.Err())
		}
		if len(m) == 0 {
			break
		}
		got++
	}
	if n := <-sent; got != n {
		t.Fatalf("received %d messages of the %d sent", got, n)
	}
	wantAlive(t, a, b)
}

// TestPingOnIdleLink: with one link per stream and the first link's writer
// stuck on a full buffer, pings go out on another link.
func TestPingOnIdleLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m0, _ := memPair() // nobody reads the peer's end
		m1, r1 := memPair()
		a := New([]Conn{m0, m1}, Config{Streams: 2, QueueBytes: 1 << 20, CloseTimeout: time.Second, Liveness: testLiveness})
		defer a.Abort(nil)
		go func() { // blocks link 0's writer on a full buffer
			a.Send(context.Background(), 0, make([]byte, 1<<20))
		}()
		r1.SetReadDeadline(time.Now().Add(testLiveness * 3 / 4)) // a ping is due at half
		r := frame.NewReader(r1, 2)
		h, _, err := r.Next()
		if err != nil || h.Type != frame.Ping {
			t.Fatalf("link 1 read %+v, %v; want a ping", h, err)
		}
	})
}

// TestCloseWaitsForSlowReader: a Close waits for a Send that is held up by
// the peer's slow application, for longer than the liveness bound. The
// closing side must go on pinging its idle links meanwhile, or the peer,
// whose reader of an idle link waits in Read, takes it for dead and the
// messages under way are lost. Every message whose Send succeeded must
// arrive, and the peer must see an orderly close. Striped, it runs over
// loopback TCP in real time, as TestStalledReaderIsNotLost says why.
func TestCloseWaitsForSlowReader(t *testing.T) {
	for _, tc := range linkShapes {
		t.Run(tc.name, func(t *testing.T) {
			if tc.striped {
				closeWaits(t, tcpConns, tc.links, true, realLiveness)
				return
			}
			synctest.Test(t, func(t *testing.T) {
				closeWaits(t, memConns, tc.links, false, testLiveness)
			})
		})
	}
}

func closeWaits(t *testing.T, pair func(*testing.T) (Conn, Conn), links int, striped bool, liveness time.Duration) {
	var ca, cb []Conn
	for range links {
		x, y := pair(t)
		ca, cb = append(ca, x), append(cb, y)
	}
	cfg := Config{Streams: 2, QueueBytes: 256 << 10, CloseTimeout: 20 * liveness, Liveness: liveness, WatchEach: true,
		Striped: striped, PartialBytes: 256 << 10}
	a, b := New(ca, cfg), New(cb, cfg)
	defer a.Abort(nil)
	defer b.Abort(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*liveness)
	defer cancel()
	msg := make([]byte, 200<<10)
	sent := make(chan int, 1)
	go func() {
		n := 0
		for range 100 { // far more than the queue and the buffers hold
			if a.Send(ctx, 0, msg) != nil {
				break
			}
			n++
		}
		sent <- n
	}()
	time.Sleep(liveness) // the sender is held up by now
	closed := make(chan error, 1)
	go func() { closed <- a.Close() }()
	time.Sleep(4 * liveness)
	wantAlive(t, b)
	got := 0
	for {
		_, err := b.Recv(ctx, 0)
		if err != nil {
			if !errors.Is(err, transport.ErrPeerClosed) || errors.Is(err, transport.ErrPeerLost) {
				t.Fatalf("after %d messages: %v, want the peer's orderly close (the closing side: %v)", got, err, a.Err())
			}
			break
		}
		got++
	}
	if n := <-sent; got != n {
		t.Errorf("received %d messages of the %d sent", got, n)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

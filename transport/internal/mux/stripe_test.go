package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

func blockFrame(stream uint16, seq uint32, msgLen int, end bool, p string) []byte {
	h := frame.Header{Type: frame.Block, Stream: stream, Len: uint32(len(p)), MsgLen: uint32(msgLen), Seq: seq}
	if end {
		h.Flags = frame.FlagEnd
	}
	return append(h.Append(nil), p...)
}

func stripedConfig(streams int) Config {
	return Config{Streams: streams, Striped: true, QueueBytes: 1 << 20, CloseTimeout: time.Second}
}

// TestStripedReorder writes a stream's blocks by two raw links in the
// wrong order: the association must deliver its messages whole and in the
// order they were numbered.
func TestStripedReorder(t *testing.T) {
	m0, r0 := tcpPair(t)
	m1, r1 := tcpPair(t)
	a := New([]Conn{m0, m1}, stripedConfig(2))
	defer a.Abort(errors.New("test done"))

	r1.Write(blockFrame(0, 1, 10, true, "world")) // ahead of its turn: held
	r1.Write(blockFrame(0, 3, 1, true, "b"))
	r1.Write(blockFrame(1, 0, 3, true, "one")) // another stream: not held up
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if msg, err := a.Recv(ctx, 1); err != nil || string(msg) != "one" {
		t.Fatalf("stream 1: %q, %v", msg, err)
	}
	r0.Write(blockFrame(0, 2, 1, true, "a"))
	r0.Write(blockFrame(0, 0, 10, false, "hello"))
	for _, want := range []string{"helloworld", "a", "b"} {
		if msg, err := a.Recv(ctx, 0); err != nil || string(msg) != want {
			t.Fatalf("stream 0: %q, %v; want %q", msg, err, want)
		}
	}
}

// TestStripedGarbage feeds a striped association blocks no honest peer
// sends: it must end with ErrProtocol, never panic or hang.
func TestStripedGarbage(t *testing.T) {
	dataFrame := append(frame.Header{Type: frame.Data, Len: 1, MsgLen: 1, Flags: frame.FlagEnd}.Append(nil), 'x')
	cases := map[string][]byte{
		"data frame":       dataFrame,
		"block twice":      append(blockFrame(0, 2, 1, true, "x"), blockFrame(0, 2, 1, true, "x")...),
		"far ahead":        blockFrame(0, maxAhead, 1, true, "x"),
		"behind":           append(blockFrame(0, 0, 1, true, "x"), blockFrame(0, 0, 1, true, "x")...),
		"msglen changes":   append(blockFrame(0, 0, 3, false, "x"), blockFrame(0, 1, 9, false, "y")...),
		"early end":        blockFrame(0, 0, 3, true, "x"),
		"overrun":          append(blockFrame(0, 0, 2, false, "x"), blockFrame(0, 1, 2, true, "yz")...),
		"bad stream":       blockFrame(5, 0, 1, true, "x"),
		"seq after header": frame.Header{Type: frame.Block, Len: 1, MsgLen: 1}.Append(nil)[:frame.HeaderLen+2],
	}
	for name, junk := range cases {
		t.Run(name, func(t *testing.T) {
			m0, r0 := tcpPair(t)
			m1, _ := tcpPair(t)
			a := New([]Conn{m0, m1}, stripedConfig(2))
			r0.Write(junk)
			if name == "seq after header" {
				r0.CloseWrite()
			}
			select {
			case <-a.Done():
			case <-time.After(patience):
				a.Abort(errors.New("test done"))
				t.Fatal("association did not end on garbage")
			}
			if err := a.Err(); !errors.Is(err, transport.ErrProtocol) && !errors.Is(err, transport.ErrPeerClosed) {
				t.Errorf("Err() = %v, want ErrProtocol", err)
			} else if name != "seq after header" && !errors.Is(err, transport.ErrProtocol) {
				t.Errorf("Err() = %v, want ErrProtocol", err)
			}
		})
	}
	t.Run("block on a framed association", func(t *testing.T) {
		mine, raw := tcpPair(t)
		a := newAssoc(mine, 2)
		raw.Write(blockFrame(0, 0, 1, true, "x"))
		select {
		case <-a.Done():
		case <-time.After(patience):
			a.Abort(errors.New("test done"))
			t.Fatal("association did not end on a block frame")
		}
		if err := a.Err(); !errors.Is(err, transport.ErrProtocol) {
			t.Errorf("Err() = %v, want ErrProtocol", err)
		}
	})
}

// stripedPair connects two striped associations by links TCP pairs.
func stripedPair(t *testing.T, links, streams int, da, db Driver, block int) (a, b *Assoc) {
	var ca, cb []Conn
	for range links {
		x, y := tcpPair(t)
		ca, cb = append(ca, x), append(cb, y)
	}
	cfg := stripedConfig(streams)
	cfg.BlockSize = block
	cfg.Driver = da
	a = New(ca, cfg)
	cfg.Driver = db
	b = New(cb, cfg)
	t.Cleanup(func() { a.Abort(errors.New("test done")); b.Abort(errors.New("test done")) })
	return a, b
}

// TestStripedRoundTrip sends messages of many sizes on every stream at
// once, striped over three links in small blocks, each way with another
// driver, and checks that each stream gets its own messages whole and in
// order; then Close delivers what was sent before it.
func TestStripedRoundTrip(t *testing.T) {
	for _, d := range []Driver{RoundRobin, PollAll} {
		t.Run(d.String(), func(t *testing.T) {
			const streams, perStream = 3, 40
			a, b := stripedPair(t, 3, streams, d, PollAll+RoundRobin-d, 1000)
			msg := func(s, i int) []byte {
				r := rand.New(rand.NewPCG(uint64(s), uint64(i)))
				p := make([]byte, r.IntN(5000))
				for j := range p {
					p[j] = byte(r.Uint32())
				}
				return append(p, fmt.Sprintf("s%d m%d", s, i)...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan error, 2*streams)
			for s := range streams {
				wg.Go(func() {
					for i := range perStream {
						if err := a.Send(ctx, s, msg(s, i)); err != nil {
							errs <- fmt.Errorf("send s%d m%d: %w", s, i, err)
							return
						}
					}
				})
				wg.Go(func() {
					for i := range perStream {
						got, err := b.Recv(ctx, s)
						if err != nil {
							errs <- fmt.Errorf("recv s%d m%d: %w", s, i, err)
							return
						}
						if !bytes.Equal(got, msg(s, i)) {
							errs <- fmt.Errorf("stream %d message %d: got %d bytes ending %q", s, i, len(got), got[max(0, len(got)-8):])
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if err := a.Send(ctx, 1, bytes.Repeat([]byte("z"), 9999)); err != nil {
				t.Fatal(err)
			}
			go a.Close()
			if got, err := b.Recv(ctx, 1); err != nil || len(got) != 9999 {
				t.Fatalf("message sent before Close: %d bytes, %v", len(got), err)
			}
			if _, err := b.Recv(ctx, 1); !errors.Is(err, transport.ErrPeerClosed) {
				t.Fatalf("after the peer's Close: %v, want ErrPeerClosed", err)
			}
		})
	}
}

// TestStripedHeldBound: a peer that sends a stream's blocks far ahead of
// the one due, even empty ones, cannot make the receiver hold more than
// the bound; the reader waits, and once the due block comes everything
// is delivered in order.
func TestStripedHeldBound(t *testing.T) {
	m0, r0 := tcpPair(t)
	m1, r1 := tcpPair(t)
	cfg := stripedConfig(1)
	cfg.PartialBytes = 64 << 10
	a := New([]Conn{m0, m1}, cfg)
	defer a.Abort(errors.New("test done"))
	const ahead = 2000 // 2000 × 256 bytes of bookkeeping: far over 64 KiB
	go func() {
		for seq := uint32(1); seq <= ahead; seq++ {
			if _, err := r1.Write(blockFrame(0, seq, 0, true, "")); err != nil {
				return
			}
		}
	}()
	held := func() int64 {
		b := a.heldBudget
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.used
	}
	deadline := time.Now().Add(patience)
	for held() < cfg.PartialBytes-int64(heldCost(0)) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a reader over the bound would push it further
	if got := held(); got > cfg.PartialBytes || got < cfg.PartialBytes/2 {
		t.Fatalf("held %d bytes' worth with a bound of %d", got, cfg.PartialBytes)
	}
	r0.Write(blockFrame(0, 0, 1, true, "x"))
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if msg, err := a.Recv(ctx, 0); err != nil || string(msg) != "x" {
		t.Fatalf("the due block: %q, %v", msg, err)
	}
	for i := range ahead {
		if msg, err := a.Recv(ctx, 0); err != nil || len(msg) != 0 {
			t.Fatalf("empty message %d: %q, %v", i+1, msg, err)
		}
	}
}

// TestStripedWritersEndWithPeerClose: when the peer closes, the
// association ends and so do its block writers, with no local Close.
func TestStripedWritersEndWithPeerClose(t *testing.T) {
	writers := func() int { // goroutines startStriping started, running or not yet
		buf := make([]byte, 1<<20)
		n := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "created by github.com/braidhq/braid/transport/internal/mux.(*Assoc).startStriping") {
				n++
			}
		}
		return n
	}
	settle := func(want int) int {
		deadline := time.Now().Add(patience)
		for writers() != want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		return writers()
	}
	if got := settle(0); got != 0 { // earlier tests' associations are gone
		t.Fatalf("%d block writers running before the test", got)
	}
	const base = 0
	a, b := stripedPair(t, 3, 1, PollAll, RoundRobin, 0)
	if got := writers(); got != base+6 {
		t.Fatalf("%d block writers running, want %d", got, base+6)
	}
	b.Close()
	select {
	case <-a.Done():
	case <-time.After(patience):
		t.Fatal("the association did not end when its peer closed")
	}
	if got := settle(base); got != base {
		t.Errorf("%d block writers still running after both ends ended, want %d", got, base)
	}
}

// TestStripedSenderReservesMultiBlock: a message of more than one block
// is put together by the receiver under its budget, so the sender must
// reserve it too, even when it is under 64 KiB (small blocks); a sender that
// did not could fill the receiver's budget and leave its reader waiting for
// blocks stuck behind it.
func TestStripedSenderReservesMultiBlock(t *testing.T) {
	a, _ := stripedPair(t, 2, 1, PollAll, PollAll, 4<<10)
	release, err := a.reserveSend(context.Background(), 8<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if a.sendBudget.TryAcquire(a.cfg.PartialBytes - 8<<10 + 1) {
		a.sendBudget.Release(a.cfg.PartialBytes - 8<<10 + 1)
		t.Error("an 8 KiB message of two 4 KiB blocks was sent without a reservation")
	}
	one, err := a.reserveSend(context.Background(), 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	one()
	if !a.sendBudget.TryAcquire(a.cfg.PartialBytes - 8<<10) {
		t.Error("a one-block message took a reservation")
	} else {
		a.sendBudget.Release(a.cfg.PartialBytes - 8<<10)
	}
}

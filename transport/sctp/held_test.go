package sctp_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/sctp"
)

// heldSizes cycles through empty, small (the stream's shared read buffer),
// one-fragment (adopted whole) and multi-fragment (reassembled) messages.
var heldSizes = []int{0, 1, 100, 4<<10 - 1, 4 << 10, 4<<10 + 1, 20000, 64<<10 - 1, 64 << 10, 64<<10 + 1, 200000, 1<<20 + 3}

// TestHeldMessagesIntact sends messages of varied sizes on several streams
// while each receiver keeps every message it was given, and checks them all
// once the last has arrived: a buffer the transport reused while the
// application held it (a message's, a pooled record's, or the sender's
// after Send returned, which the sender overwrites) shows as changed bytes
// or, over DTLS, as a record that fails to open and ends the association.
func TestHeldMessagesIntact(t *testing.T) {
	for _, tls := range []transport.TLSMode{transport.TLSOff, transport.TLSOn} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			testHeldMessages(t, sctp.Config{TLS: tls, MTU: 1500}, 3, 4*len(heldSizes))
		})
	}
}

func testHeldMessages(t *testing.T, cfg sctp.Config, streams, perStream int) {
	d, l := pair(t, sctp.New(cfg), streams)
	defer func() { d.Abort(nil); l.Abort(nil) }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	held := make([][][]byte, streams)
	errs := make(chan error, 2*streams)
	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() { errs <- sendHeld(ctx, d, s, perStream) })
		wg.Go(func() {
			for range perStream {
				m, err := l.Recv(ctx, s)
				if err != nil {
					errs <- fmt.Errorf("stream %d, message %d: %w", s, len(held[s]), err)
					return
				}
				held[s] = append(held[s], m)
			}
			errs <- nil
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for s := range streams {
		for i, m := range held[s] {
			if want := heldMessage(s, i); !bytes.Equal(m, want) {
				t.Fatalf("stream %d, message %d (%d bytes): got %d bytes, first difference at %d", s, i, len(want), len(m), firstDiff(m, want))
			}
		}
	}
}

// sendHeld sends stream s's messages from one buffer, overwritten after
// each Send returns.
func sendHeld(ctx context.Context, a transport.Association, s, n int) error {
	var buf []byte
	for i := range n {
		buf = append(buf[:0], heldMessage(s, i)...)
		if err := a.Send(ctx, s, buf); err != nil {
			return fmt.Errorf("send on stream %d, message %d: %w", s, i, err)
		}
		for j := range buf {
			buf[j] = 0xA5
		}
	}
	return nil
}

// heldMessage is message i of stream s: pseudo-random bytes of one of
// heldSizes, different for every message.
func heldMessage(s, i int) []byte {
	r := rand.New(rand.NewPCG(uint64(s), uint64(i)))
	m := make([]byte, heldSizes[i%len(heldSizes)])
	for j := range m {
		m[j] = byte(r.Uint32())
	}
	return m
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

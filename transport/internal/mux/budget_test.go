package mux

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

const testPartial = 1 << 20

func budgetAssoc(conns []Conn, streams int) *Assoc {
	return New(conns, Config{Streams: streams, QueueBytes: 4 << 20, CloseTimeout: time.Second, PartialBytes: testPartial})
}

// sendAll sends one 600 KiB message on each stream at once (2.3 MiB under
// way against a 1 MiB bound) and checks they all arrive whole.
func sendAll(t *testing.T, snd, rcv *Assoc, streams int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for s := range streams {
		msg := bytes.Repeat([]byte{byte('a' + s)}, 600<<10)
		wg.Go(func() {
			if err := snd.Send(ctx, s, msg); err != nil {
				t.Errorf("Send on stream %d: %v", s, err)
			}
		})
		wg.Go(func() {
			got, err := rcv.Recv(ctx, s)
			if err != nil || !bytes.Equal(got, msg) {
				t.Errorf("Recv on stream %d: %d bytes, %v", s, len(got), err)
			}
		})
	}
	wg.Wait()
}

// TestPartialBoundShared: over one link, a sender keeps to the bound on
// messages under way, so concurrent large messages all arrive.
func TestPartialBoundShared(t *testing.T) {
	a, b := tcpPair(t)
	snd, rcv := budgetAssoc([]Conn{a}, 4), budgetAssoc([]Conn{b}, 4)
	defer snd.Abort(nil)
	defer rcv.Abort(nil)
	sendAll(t, snd, rcv, 4)
}

// TestPartialBoundPerStreamLinks: with a link per stream the sender does
// not wait; the receiver does, and every message still arrives.
func TestPartialBoundPerStreamLinks(t *testing.T) {
	var mine, theirs []Conn
	for range 4 {
		a, b := tcpPair(t)
		mine, theirs = append(mine, a), append(theirs, b)
	}
	snd, rcv := budgetAssoc(mine, 4), budgetAssoc(theirs, 4)
	defer snd.Abort(nil)
	defer rcv.Abort(nil)
	sendAll(t, snd, rcv, 4)
}

// TestPartialFlood: a peer that starts a maximum-size message on each of
// 256 streams and sends one 64 KiB frame of each is aborted once its
// announced lengths pass frame.MaxPartialBytes (without the bound the
// association stayed open with all 256 messages under way).
func TestPartialFlood(t *testing.T) {
	const streams = 256
	mine, raw := tcpPair(t)
	a := New([]Conn{mine}, Config{Streams: streams, QueueBytes: 1 << 20, CloseTimeout: time.Second})
	defer a.Abort(nil)
	payload := make([]byte, frame.MaxPayload)
	go func() {
		for s := range streams {
			h := frame.Header{Type: frame.Data, Stream: uint16(s), Len: frame.MaxPayload, MsgLen: transport.MaxMessageSize}
			if _, err := raw.Write(append(h.Append(nil), payload...)); err != nil {
				return
			}
		}
	}()
	select {
	case <-a.Done():
	case <-time.After(patience):
		t.Fatal("association still open after a flood of partial messages")
	}
	if err := a.Err(); !errors.Is(err, transport.ErrProtocol) {
		t.Errorf("Err = %v, want ErrProtocol", err)
	}
}

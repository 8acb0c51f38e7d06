package mux

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// writeCounter counts the writes made on a connection. It has no writev, so a
// frame written as header and payload by net.Buffers is two writes.
type writeCounter struct {
	Conn
	writes atomic.Int64
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// batchMsgs returns n distinct messages of size bytes each.
func batchMsgs(n, size int) [][]byte {
	msgs := make([][]byte, n)
	for i := range msgs {
		msgs[i] = bytes.Repeat([]byte{byte(i)}, size)
		copy(msgs[i], fmt.Sprint(i))
	}
	return msgs
}

// recvAll receives len(want) messages on stream s of b, by RecvBatch, and
// checks they are want in order.
func recvAll(t *testing.T, b *Assoc, s int, want [][]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	var got [][]byte
	for len(got) < len(want) {
		var err error
		if got, err = b.RecvBatch(ctx, s, got, len(want)-len(got)); err != nil {
			t.Fatalf("after %d of %d messages: %v", len(got), len(want), err)
		}
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d: got %d bytes %.8q, want %d bytes %.8q", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}

// TestSendBatchCoalesces sends 50 units' worth of 1 KiB messages queued at
// once: SendBatch writes them in one write (a Send each is 100 writes on a
// connection without writev, 50 with it), and the peer receives them as 50
// messages, in order.
func TestSendBatchCoalesces(t *testing.T) {
	mine, theirs := tcpPair(t)
	cc := &writeCounter{Conn: mine}
	a, b := newAssoc(cc, 2), newAssoc(theirs, 2)
	defer a.Abort(nil)
	defer b.Abort(nil)
	msgs := batchMsgs(50, 1024)
	if err := transport.SendBatch(context.Background(), a, 1, msgs); err != nil {
		t.Fatal(err)
	}
	if n := cc.writes.Load(); n != 1 {
		t.Errorf("50 messages of 1 KiB sent in %d writes, want 1", n)
	}
	recvAll(t, b, 1, msgs)
}

// TestSendBatchMixed sends a batch with a message of several frames in the
// middle and more than maxBatchBytes of small ones: every message arrives
// whole and in order, the small ones in a few writes.
func TestSendBatchMixed(t *testing.T) {
	mine, theirs := tcpPair(t)
	cc := &writeCounter{Conn: mine}
	a, b := newAssoc(cc, 1), newAssoc(theirs, 1)
	defer a.Abort(nil)
	defer b.Abort(nil)
	small := batchMsgs(200, 1000) // 200 KiB: four writes of up to 64 KiB
	msgs := append(append(append([][]byte{}, small[:100]...), batchMsgs(1, 3*frame.MaxPayload+7)...), small[100:]...)
	msgs = append(msgs, []byte{}) // an empty message is a message too
	done := make(chan error, 1)
	go func() { done <- a.SendBatch(context.Background(), 0, msgs) }()
	recvAll(t, b, 0, msgs)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// 100 KiB and 100 KiB of small messages: two writes each; the big
	// one four frames of a writev each, two writes apiece here.
	if n := cc.writes.Load(); n > 4+8 {
		t.Errorf("batch sent in %d writes, want at most 12", n)
	}
}

// TestSendBatchRefusesTooLarge fails a batch with a message over the limit
// before sending any of it.
func TestSendBatchRefusesTooLarge(t *testing.T) {
	mine, theirs := tcpPair(t)
	cc := &writeCounter{Conn: mine}
	a, b := newAssoc(cc, 1), newAssoc(theirs, 1)
	defer a.Abort(nil)
	defer b.Abort(nil)
	msgs := [][]byte{[]byte("a"), make([]byte, transport.MaxMessageSize+1)}
	if err := a.SendBatch(context.Background(), 0, msgs); err == nil {
		t.Fatal("batch with an oversized message sent")
	}
	if n := cc.writes.Load(); n != 0 {
		t.Errorf("%d writes for a refused batch", n)
	}
}

// BenchmarkSendBatch is a message's cost to send and receive over loopback
// TCP, 1 KiB messages: a Send each against SendBatch of 2 and of 16 (what a
// server has for one worker at once), the peer taking them by RecvBatch.
// cpu-ns/msg is the process's CPU time, both ends', per message.
func BenchmarkSendBatch(b *testing.B) {
	for _, n := range []int{1, 2, 16} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) { benchmarkSendBatch(b, n) })
	}
}

func benchmarkSendBatch(b *testing.B, n int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	a, p := newAssoc(c.(*net.TCPConn), 1), newAssoc((<-acc).(*net.TCPConn), 1)
	defer a.Abort(nil)
	defer p.Abort(nil)
	msgs := batchMsgs(n, 1024)
	total := b.N * n
	done := make(chan error, 1)
	go func() {
		var got [][]byte
		for k := 0; k < total; k += len(got) {
			var err error
			if got, err = p.RecvBatch(context.Background(), 0, got[:0], 64); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.SetBytes(int64(n) * 1024)
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		if n == 1 {
			err = a.Send(context.Background(), 0, msgs[0])
		} else {
			err = a.SendBatch(context.Background(), 0, msgs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/msg")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(total), "cpu-ns/msg")
}

// cpuTime is the CPU time this process has used, user and system, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package server

import (
	"context"
	"sync"
	"testing"
	"time"
)

// batchRecorder is an association that records the batches it is handed.
type batchRecorder struct {
	fakeAssoc
	mu      sync.Mutex // guards batches
	batches [][]string
	got     chan struct{} // a batch came
}

func (b *batchRecorder) Send(ctx context.Context, s int, p []byte) error {
	return b.SendBatch(ctx, s, [][]byte{p})
}

func (b *batchRecorder) SendBatch(_ context.Context, _ int, msgs [][]byte) error {
	var batch []string
	for _, m := range msgs {
		batch = append(batch, string(m))
	}
	b.mu.Lock()
	b.batches = append(b.batches, batch)
	b.mu.Unlock()
	b.got <- struct{}{}
	return nil
}

// TestSenderBatchesQueuedUnits: units queued on a stream while its sender
// was busy go to the association as one batch (one write on the TCP
// transports), in order, the want of stream 0 with them; a unit queued
// later goes alone.
func TestSenderBatchesQueuedUnits(t *testing.T) {
	s := newTestServer(t, t.TempDir())
	a := &batchRecorder{got: make(chan struct{}, 8)}
	q, wants := make(chan []byte, 8), make(chan []byte, 1)
	for _, m := range []string{"u1", "u2", "u3"} {
		q <- []byte(m)
	}
	wants <- []byte("want")
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.disp.sender(a, 0, q, wants)
	}()
	wait := func() {
		select {
		case <-a.got:
		case <-time.After(time.Minute):
			t.Fatal("no batch sent")
		}
	}
	wait()
	q <- []byte("u4")
	wait()
	close(q)
	<-done
	if len(a.batches) != 2 || len(a.batches[0]) != 4 || len(a.batches[1]) != 1 || a.batches[1][0] != "u4" {
		t.Fatalf("batches %q, want u1 to u3 and the want in one, then u4", a.batches)
	}
	var units []string
	for _, m := range a.batches[0] {
		if m != "want" {
			units = append(units, m)
		}
	}
	if len(units) != 3 || units[0] != "u1" || units[1] != "u2" || units[2] != "u3" {
		t.Errorf("first batch %q: units out of order", a.batches[0])
	}
}

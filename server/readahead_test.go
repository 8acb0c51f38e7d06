package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/local"
)

// TestReadAhead: the inputs of a job of many inputs are read ahead of the
// loop, in order, and taken from memory with the right bytes; a unit the
// loop took out of order makes the readers follow it; stop ends them.
func TestReadAhead(t *testing.T) {
	st, err := local.Open(t.TempDir(), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &Server{ctx: ctx, store: st}
	const n = 300
	bodies := make([][]byte, n)
	ids := make([][32]byte, n)
	for i := range bodies {
		bodies[i] = []byte(fmt.Sprintf("input %d", i))
		info, err := st.PutBytes(ctx, bodies[i])
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = statedb.ParseID(info.ID)
	}
	j := &jobRun{inputs: ids}
	r := s.startReadAhead(j)
	takeWhenRead := func(i int) []byte {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			r.mu.Lock()
			_, read := r.ready[i]
			r.mu.Unlock()
			if read {
				b, ok := r.take(i)
				if !ok {
					t.Fatalf("unit %d's input was read, then not given", i)
				}
				return b
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("unit %d's input was not read ahead within 30s", i)
		return nil
	}
	for i := range 100 {
		if b := takeWhenRead(i); !bytes.Equal(b, bodies[i]) {
			t.Fatalf("unit %d: read ahead %q, want %q", i, b, bodies[i])
		}
	}
	// The loop takes unit 250 before the readers got there (it reads it
	// itself): they follow it, on from 251.
	r.take(250)
	if b := takeWhenRead(251); !bytes.Equal(b, bodies[251]) {
		t.Fatalf("unit 251: %q", b)
	}
	if b, ok := r.take(5); ok {
		t.Fatalf("unit 5 given twice: %q", b)
	}
	r.stop()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the readers did not stop")
	}
	var none *readAhead
	if _, ok := none.take(0); ok {
		t.Fatal("a nil readAhead gave an input")
	}
	none.stop()
}

package sctp

import (
	"bytes"
	"sync"
	"testing"
)

// TestCompact: a packet of an Ethernet MTU in a shared receive buffer
// moves into a pooled buffer of smallRxSize, a smaller or a bigger one
// into a buffer of its own size, and one that holds more than a quarter of its share stays; the
// shared buffer is released when a packet leaves it.
func TestCompact(t *testing.T) {
	var big sync.Pool
	shared := func(n int) packet {
		rb := &rxBuf{b: make([]byte, 64<<10), pool: &big}
		rb.refs.Store(1)
		for i := range n {
			rb.b[i] = byte(i)
		}
		return packet{p: rb.b[:n], rb: rb}
	}
	s := &udpSocket{}
	for _, tc := range []struct {
		name  string
		n     int
		moved bool
		pool  *sync.Pool
	}{
		{"an Ethernet MTU's packet", 1452, true, &smallRxPool},
		{"a SACK, too small for the pool's buffers", 48, true, nil},
		{"bigger than the pool's buffers", smallRxSize + 1, true, nil},
		{"more than a quarter of the buffer", 16<<10 + 1, false, &big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := shared(tc.n)
			want := bytes.Clone(in.p)
			out := s.compact(in)
			if !bytes.Equal(out.p, want) {
				t.Fatal("the packet's bytes changed")
			}
			if got := out.rb != in.rb; got != tc.moved {
				t.Fatalf("moved %v, want %v", got, tc.moved)
			}
			if out.rb.pool != tc.pool {
				t.Fatalf("the packet's buffer comes back to pool %p, want %p", out.rb.pool, tc.pool)
			}
			if tc.moved && in.rb.refs.Load() != 0 {
				t.Fatal("the shared buffer was not released")
			}
			if out.rb.refs.Load() != 1 {
				t.Fatalf("the packet's buffer has %d references, want 1", out.rb.refs.Load())
			}
			out.rb.release()
		})
	}
}

package msgq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

func TestOrderAndEnd(t *testing.T) {
	q := New(1<<20, 100)
	for i := range 10 {
		q.Push([]byte{byte(i)}, nil)
	}
	q.End(transport.ErrPeerClosed)
	if q.Push([]byte{99}, nil) {
		t.Error("Push after End succeeded")
	}
	for i := range 10 {
		p, err := q.Pop(context.Background(), nil)
		if err != nil || p[0] != byte(i) {
			t.Fatalf("Pop %d = %v, %v", i, p, err)
		}
	}
	if _, err := q.Pop(context.Background(), nil); !errors.Is(err, transport.ErrPeerClosed) {
		t.Errorf("Pop after drain = %v, want ErrPeerClosed", err)
	}
}

func TestPushBlocksWhenFull(t *testing.T) {
	q := New(10, 100)
	q.Push(make([]byte, 100), nil) // one message is always admitted
	stop := make(chan struct{})
	pushed := make(chan bool)
	go func() { pushed <- q.Push([]byte("x"), stop) }()
	select {
	case <-pushed:
		t.Fatal("Push did not block on a full queue")
	case <-time.After(50 * time.Millisecond):
	}
	q.Pop(context.Background(), nil)
	if !<-pushed {
		t.Error("Push failed after room was made")
	}
	q.Push(make([]byte, 100), nil)
	go func() { pushed <- q.Push([]byte("y"), stop) }()
	close(stop)
	if <-pushed {
		t.Error("Push succeeded after stop")
	}
}

func TestPopUnblocks(t *testing.T) {
	q := New(10, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := q.Pop(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Pop = %v, want deadline", err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, err := q.Pop(context.Background(), stop); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Pop = %v, want ErrClosed", err)
	}
}

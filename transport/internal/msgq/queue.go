// Package msgq is the bounded per-stream message queue between a
// transport's receive goroutine and the stream's Recv callers.
package msgq

import (
	"context"
	"sync"

	"github.com/braidhq/braid/transport"
)

// Queue holds received messages of one stream. One goroutine pushes; any
// number may pop. Push blocks while the queue holds maxBytes or maxItems
// (but always admits one message), which is how a stalled reader pushes back
// on the network.
type Queue struct {
	maxBytes, maxItems int
	ready              chan struct{} // cap 1: a message arrived or the queue ended
	space              chan struct{} // cap 1: a message was taken

	mu    sync.Mutex // guards the fields below
	items [][]byte
	head  int
	bytes int
	ended bool
	err   error
}

// New returns an empty queue with the given bounds.
func New(maxBytes, maxItems int) *Queue {
	return &Queue{
		maxBytes: maxBytes, maxItems: maxItems,
		ready: make(chan struct{}, 1), space: make(chan struct{}, 1),
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Push appends p, waiting for room. It returns false, dropping p, if stop
// closes first or the queue has ended.
func (q *Queue) Push(p []byte, stop <-chan struct{}) bool {
	for {
		q.mu.Lock()
		if q.ended {
			q.mu.Unlock()
			return false
		}
		n := len(q.items) - q.head
		if n == 0 || (q.bytes < q.maxBytes && n < q.maxItems) {
			q.items = append(q.items, p)
			q.bytes += len(p)
			q.mu.Unlock()
			signal(q.ready)
			return true
		}
		q.mu.Unlock()
		select {
		case <-q.space:
		case <-stop:
			return false
		}
	}
}

// End marks that no more messages will come; Pop returns err once the queue
// is drained. Only the first End counts.
func (q *Queue) End(err error) {
	if err == nil {
		err = transport.ErrPeerClosed
	}
	q.mu.Lock()
	if !q.ended {
		q.ended, q.err = true, err
	}
	q.mu.Unlock()
	signal(q.ready)
}

// Pop returns the next message. It fails with ctx's error, with
// transport.ErrClosed when stop closes, or with End's error once drained.
func (q *Queue) Pop(ctx context.Context, stop <-chan struct{}) ([]byte, error) {
	for {
		p, ok, err := q.take()
		if ok || err != nil {
			return p, err
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stop:
			return nil, transport.ErrClosed
		}
	}
}

// TryPop returns the next message if one is queued, without waiting.
func (q *Queue) TryPop() ([]byte, bool) {
	p, ok, _ := q.take()
	return p, ok
}

// take pops a message if there is one; err is End's error when drained.
func (q *Queue) take() (p []byte, ok bool, err error) {
	q.mu.Lock()
	n := len(q.items) - q.head
	if n == 0 {
		ended, err := q.ended, q.err
		q.mu.Unlock()
		if ended {
			signal(q.ready) // wake the next waiter too
		}
		return nil, false, err
	}
	p = q.items[q.head]
	q.items[q.head] = nil
	q.head++
	q.bytes -= len(p)
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head >= 1024 && q.head*2 >= len(q.items) {
		q.items = q.items[:copy(q.items, q.items[q.head:])]
		q.head = 0
	}
	q.mu.Unlock()
	signal(q.space)
	if n > 1 {
		signal(q.ready)
	}
	return p, true, nil
}

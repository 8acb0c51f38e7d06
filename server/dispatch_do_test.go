package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// loopOnly is a dispatcher whose loop only runs what do and post queue.
func loopOnly(t *testing.T) *dispatcher {
	t.Helper()
	d := &dispatcher{s: &Server{stopped: make(chan struct{})}, ctl: make(chan func(), 4), exited: make(chan struct{})}
	stop := make(chan struct{})
	go func() {
		defer close(d.exited)
		for {
			select {
			case f := <-d.ctl:
				f()
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-d.exited })
	return d
}

// A caller whose context ends while its function runs on the loop must not
// get control back before the function is done with what the caller owns
// (a handler's request): the race TestFailuresAreLogged's heartbeat hit.
func TestDoWaitsForARunningFunction(t *testing.T) {
	d := loopOnly(t)
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		started, release := make(chan struct{}), make(chan struct{})
		var finished atomic.Bool
		errc := make(chan error, 1)
		go func() {
			errc <- d.do(ctx, func() {
				close(started)
				<-release
				finished.Store(true)
			})
		}()
		<-started
		cancel()
		close(release)
		if err := <-errc; err != nil {
			t.Fatalf("do = %v; want nil, the function having run", err)
		}
		if !finished.Load() {
			t.Fatal("do returned while its function was still running on the loop")
		}
	}
}

// A caller whose context ends before its function starts gets its error at
// once, and the function never runs.
func TestDoAbandonsAQueuedFunction(t *testing.T) {
	d := loopOnly(t)
	busy, free := make(chan struct{}), make(chan struct{})
	d.ctl <- func() { close(busy); <-free }
	<-busy
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	errc := make(chan error, 1)
	go func() { errc <- d.do(ctx, func() { ran.Store(true) }) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("do = %v; want context.Canceled", err)
	}
	close(free)
	if err := d.do(context.Background(), func() {}); err != nil { // the loop has passed the abandoned one
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("a function whose caller gave up ran anyway")
	}
}

package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/wire"
)

// fakeWorker is a worker made of the real data plane (tcpn on loopback)
// and nothing else: it registers, heartbeats, accepts the server's
// association, lends the server all its streams (one lease, never taken
// back; wants are ignored), records every unit it receives and answers
// each after a delay with the output "job/index". Tests use it to know exactly which
// units left the server and when.
type fakeWorker struct {
	name  string
	delay time.Duration
	info  api.WorkerInfo // as registered

	mu    sync.Mutex // guards units and gate
	units []gotUnit
	gate  chan struct{} // if not nil, answers wait until it is closed

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// gotUnit is a unit as the fake worker received it.
type gotUnit struct {
	job     string
	index   int
	attempt int
	at      time.Time
}

func fakeOutput(job string, index int) []byte { return fmt.Appendf(nil, "%s/%d", job, index) }

// startFakeWorker registers a fake worker with threads streams on the
// server c points at; secret is the cluster's. Options change what it
// registers.
func startFakeWorker(t *testing.T, c *client.Client, secret []byte, name string, threads int, delay time.Duration, opts ...func(*api.WorkerInfo)) *fakeWorker {
	t.Helper()
	ln, err := tcpn.New(tcpn.Config{}).Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, Name: name,
		RecStreams: threads, MaxStreams: threads})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fw := &fakeWorker{name: name, delay: delay, cancel: cancel}
	c = c.WithSecret(secret)
	info := api.WorkerInfo{Name: name, Cores: 1, MaxThreads: threads, FreeThreads: threads,
		Ops: []string{"blur", "noop", "grayscale"}, Endpoints: []api.Endpoint{{Transport: "tcpn", Addr: ln.Addr().String()}}}
	for _, o := range opts {
		o(&info)
	}
	fw.info = info
	if _, err := c.RegisterWorker(ctx, info); err != nil {
		cancel()
		ln.Close()
		t.Fatal(err)
	}
	fw.wg.Go(func() { fw.accept(ctx, ln) })
	fw.wg.Go(func() { fw.heartbeat(ctx, c) })
	t.Cleanup(func() {
		cancel()
		ln.Close()
		fw.wg.Wait()
	})
	return fw
}

// hold makes the fake worker keep the units it receives from now on,
// unanswered, until release is called.
func (fw *fakeWorker) hold() (release func()) {
	gate := make(chan struct{})
	fw.mu.Lock()
	fw.gate = gate
	fw.mu.Unlock()
	return sync.OnceFunc(func() { close(gate) })
}

// stop ends the fake worker's associations and heartbeats.
func (fw *fakeWorker) stop() {
	fw.cancel()
	fw.wg.Wait()
}

func (fw *fakeWorker) accept(ctx context.Context, ln transport.Listener) {
	for {
		a, err := ln.Accept(ctx)
		if err != nil {
			return
		}
		if a.Send(ctx, 0, wire.AppendLease(nil, wire.Lease{Streams: a.Streams(), Seq: 1})) != nil {
			a.Abort(errors.New("fake worker: lease not sent"))
			continue
		}
		for s := range a.Streams() {
			fw.wg.Go(func() { fw.serve(ctx, a, s) })
		}
		fw.wg.Go(func() {
			<-ctx.Done()
			a.Abort(errors.New("fake worker stopped"))
		})
	}
}

// serve reads the units of one stream as they arrive, recording each, and
// answers them one at a time.
func (fw *fakeWorker) serve(ctx context.Context, a transport.Association, s int) {
	queue := make(chan wire.Unit, 64)
	fw.wg.Go(func() { fw.answer(ctx, a, s, queue) })
	defer close(queue)
	for {
		msg, err := a.Recv(ctx, s)
		if err != nil {
			return
		}
		if wire.KindOf(msg) == wire.KindWant {
			continue
		}
		u, err := wire.ParseUnit(msg)
		if err != nil {
			a.Abort(err)
			return
		}
		fw.mu.Lock()
		fw.units = append(fw.units, gotUnit{job: u.Job, index: u.Index, attempt: u.Attempt, at: time.Now()})
		fw.mu.Unlock()
		queue <- u
	}
}

func (fw *fakeWorker) answer(ctx context.Context, a transport.Association, s int, queue <-chan wire.Unit) {
	for u := range queue {
		fw.mu.Lock()
		gate := fw.gate
		fw.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				continue // drain the queue until serve closes it
			}
		}
		select {
		case <-time.After(fw.delay):
		case <-ctx.Done():
			continue
		}
		res := wire.AppendResult(nil, &wire.Result{ID: u.ID, Status: wire.StatusOK, Compute: fw.delay,
			Output: fakeOutput(u.Job, u.Index)})
		_ = a.Send(ctx, s, res)
	}
}

func (fw *fakeWorker) heartbeat(ctx context.Context, c *client.Client) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(300 * time.Millisecond):
			_ = c.Heartbeat(ctx, fw.name, 0)
		}
	}
}

// received returns the units received so far.
func (fw *fakeWorker) received() []gotUnit {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return append([]gotUnit(nil), fw.units...)
}

package transporttest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// Bench measures a transport the same way for every implementation: one-way
// bulk throughput with 64 KiB messages on 1 and 4 streams, and 19 KiB
// request/response round trips on 1 and 4 streams, first with one request in
// flight per stream (latency-bound), then with a window of 8 (the way
// braid's dispatcher keeps units in flight). newT and addr are as for Run;
// newT gets the *testing.B.
func Bench(b *testing.B, newT func(t *testing.B) transport.Transport, addr string) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("bulk/64KiB/streams=%d", n), func(b *testing.B) { benchBulk(b, newT(b), addr, n) })
	}
	for _, n := range []int{1, 4} {
		for _, w := range []int{1, 8} {
			b.Run(fmt.Sprintf("reqresp/19KiB/streams=%d/window=%d", n, w), func(b *testing.B) {
				benchReqResp(b, newT(b), addr, n, w)
			})
		}
	}
}

func benchPair(b *testing.B, tr transport.Transport, addr string, n int) (d, l transport.Association) {
	b.Helper()
	s := &suite{tr: tr, addr: addr}
	lc := transport.ListenConfig{Secret: testSecret, Name: "listener", RecStreams: n, MaxStreams: n}
	return s.connect(b, s.listen(b, lc), dialCfg(n, n))
}

// drain receives on every stream of a until ctx ends.
func drain(ctx context.Context, a transport.Association, wg *sync.WaitGroup) {
	for st := range a.Streams() {
		wg.Go(func() {
			for {
				if _, err := a.Recv(ctx, st); err != nil {
					return
				}
			}
		})
	}
}

func benchBulk(b *testing.B, tr transport.Transport, addr string, n int) {
	d, l := benchPair(b, tr, addr, n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	drain(ctx, l, &wg)
	defer func() { cancel(); l.Abort(errTestDone); wg.Wait() }()
	msg := make([]byte, 64<<10)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := d.Send(ctx, i%n, msg); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func benchReqResp(b *testing.B, tr transport.Transport, addr string, n, window int) {
	d, l := benchPair(b, tr, addr, n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for st := range n {
		wg.Go(func() { echoServer(ctx, l, st, 1<<62) })
	}
	defer func() { cancel(); l.Abort(errTestDone); d.Abort(errTestDone); wg.Wait() }()
	jobs := make(chan struct{})
	var cwg sync.WaitGroup
	for st := range n {
		cwg.Go(func() { roundTrips(ctx, b, d, st, window, jobs) })
	}
	b.SetBytes(2 * 19 << 10)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		jobs <- struct{}{}
	}
	close(jobs)
	cwg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// roundTrips sends one request per job on stream st, keeping up to window
// requests in flight, and returns when every response has arrived.
func roundTrips(ctx context.Context, b *testing.B, d transport.Association, st, window int, jobs <-chan struct{}) {
	inflight := make(chan struct{}, window)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(inflight)
	wg.Go(func() {
		for range inflight {
			if _, err := d.Recv(ctx, st); err != nil {
				b.Error(err)
				return
			}
		}
	})
	req := make([]byte, 19<<10)
	for range jobs {
		inflight <- struct{}{}
		if err := d.Send(ctx, st, req); err != nil {
			b.Error(err)
			return
		}
	}
}

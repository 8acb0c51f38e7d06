package transporttest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// Latency beside bulk: "independent streams" should mean what a user takes
// it to mean, that a small message on one stream does not wait behind
// megabytes queued on another. testLatencyBesideBulk keeps stream 0 busy
// with back-to-back large messages (dialer to listener) while stream 1 makes
// 100-byte round trips (the dialer sends, the listener echoes), and bounds the
// round trips' 99th percentile.
//
// The bound is generous: on a loaded 2-core machine under the race detector
// tcpn, quic and sctp stay far below it, while a transport whose small
// messages queue behind its bulk ones (one send queue per connection, as tcp
// or an unscheduled sctp) exceeds it. A transport that declares
// IndependentStreams == false is expected to exceed it; the case logs what it
// saw and skips if it did not.
const (
	latencyBulkMsg   = 16 << 20              // one bulk message
	latencyProbe     = 100                   // one small request
	latencyWindow    = 2 * time.Second       // how long the probes run
	latencyP99Bound  = 20 * time.Millisecond // the 99th percentile must stay below it
	latencyWarmLimit = 10 * time.Second      // the bulk stream's first message must arrive within it
)

func testLatencyBesideBulk(t *testing.T, s *suite) {
	d, l := s.pair(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		d.Abort(errTestDone)
		l.Abort(errTestDone)
		wg.Wait()
	}()
	var bulkIn atomic.Int64
	first := make(chan struct{})
	wg.Go(func() { bulkSend(ctx, d, 0) })
	wg.Go(func() { bulkRecv(ctx, l, 0, &bulkIn, first) })
	wg.Go(func() { echoServer(ctx, l, 1, 1<<30) })
	select {
	case <-first:
	case <-time.After(latencyWarmLimit):
		t.Fatalf("first %d MiB bulk message not delivered within %v", latencyBulkMsg>>20, latencyWarmLimit)
	}
	start, before := time.Now(), bulkIn.Load()
	rtts, err := probeRoundTrips(ctx, d, 1, latencyWindow)
	if err != nil {
		t.Fatalf("round trips beside bulk: %v", err)
	}
	elapsed, bulk := time.Since(start), bulkIn.Load()-before
	if bulk < latencyBulkMsg {
		t.Fatalf("bulk stream delivered only %d bytes in %v beside the round trips: no load to measure against", bulk, elapsed)
	}
	p50, p99, worst := percentile(rtts, 50), percentile(rtts, 99), rtts[len(rtts)-1]
	t.Logf("%s: %d round trips of %d bytes beside bulk at %.0f MB/s: p50 %v, p99 %v, max %v",
		s.tr.Name(), len(rtts), latencyProbe, float64(bulk)/elapsed.Seconds()/1e6,
		p50.Round(time.Microsecond), p99.Round(time.Microsecond), worst.Round(time.Microsecond))
	switch {
	case s.independent() && p99 >= latencyP99Bound:
		t.Errorf("streams not independent in latency: p99 %v of small round trips beside a bulk stream, bound %v", p99, latencyP99Bound)
	case !s.independent() && p99 >= latencyP99Bound:
		t.Logf("%s: head-of-line blocking confirmed: p99 %v at or above %v", s.tr.Name(), p99, latencyP99Bound)
	case !s.independent():
		t.Skipf("%s declares IndependentStreams=false, but its p99 %v stayed below %v in this run", s.tr.Name(), p99, latencyP99Bound)
	}
}

// bulkSend sends large messages on stream st until ctx ends.
func bulkSend(ctx context.Context, a transport.Association, st int) {
	msg := pattern(latencyBulkMsg, 11)
	for a.Send(ctx, st, msg) == nil {
	}
}

// bulkRecv receives stream st's messages, counting their bytes in n; first
// is closed when the first one has arrived.
func bulkRecv(ctx context.Context, a transport.Association, st int, n *atomic.Int64, first chan<- struct{}) {
	for i := 0; ; i++ {
		m, err := a.Recv(ctx, st)
		if err != nil {
			return
		}
		n.Add(int64(len(m)))
		if i == 0 {
			close(first)
		}
	}
}

// probeRoundTrips makes small round trips on stream st for window and
// returns their durations, sorted.
func probeRoundTrips(ctx context.Context, a transport.Association, st int, window time.Duration) ([]time.Duration, error) {
	var rtts []time.Duration
	end := time.Now().Add(window)
	for i := 0; time.Now().Before(end); i++ {
		req := pattern(latencyProbe, uint64(i))
		t0 := time.Now()
		if err := a.Send(ctx, st, req); err != nil {
			return nil, fmt.Errorf("send %d: %w", i, err)
		}
		resp, err := a.Recv(ctx, st)
		if err != nil {
			return nil, fmt.Errorf("recv %d: %w", i, err)
		}
		rtts = append(rtts, time.Since(t0))
		if !bytes.Equal(resp, req) {
			return nil, fmt.Errorf("round trip %d: echo differs from request", i)
		}
	}
	slices.Sort(rtts)
	return rtts, nil
}

// percentile returns the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

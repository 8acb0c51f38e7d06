package tperf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
)

// drive dials addr and runs the test on every stream.
func drive(ctx context.Context, cfg Config, addr string) (Result, error) {
	a, err := cfg.Transport.Dial(ctx, addr, transport.DialConfig{
		Secret: cfg.Secret, Name: "tperf", RecStreams: cfg.Streams, MaxStreams: cfg.Streams})
	if err != nil {
		return Result{}, err
	}
	defer a.Close()
	src, err := openPayload(cfg)
	if err != nil {
		return Result{}, err
	}
	defer src.close()
	var (
		wg       sync.WaitGroup
		bytes    atomic.Int64
		msgs     atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	start := time.Now()
	stop := start.Add(cfg.Duration)
	var lat latencies
	for s := range a.Streams() {
		wg.Go(func() {
			b, m, err := runStream(ctx, streamPlan(cfg, s, src, &lat), a, s, stop)
			bytes.Add(b)
			msgs.Add(m)
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("stream %d: %w", s, err) })
			}
		})
	}
	wg.Wait()
	res := Result{Seconds: time.Since(start).Seconds(), Bytes: bytes.Load(), Messages: msgs.Load()}
	res.LatencyP50, res.LatencyP99, res.LatencyMax = lat.summary()
	return res, firstErr
}

// plan is what one stream does in a test.
type plan struct {
	mode string                 // announced to the listener: bulk or rr
	next func() ([]byte, error) // the next message; nil: send none
	lat  *latencies             // if set, round trips are timed into it
}

// holSmall is the size of the timed round trips in mode hol.
const holSmall = 100

// streamPlan says what stream s does: every stream runs cfg.Mode, except
// in mode hol, where stream 0 is bulk, stream 1 times small round trips
// and any others stay idle.
func streamPlan(cfg Config, s int, src *payload, lat *latencies) plan {
	next := func() ([]byte, error) { return src.next(s) }
	if cfg.Mode != "hol" {
		return plan{mode: cfg.Mode, next: next}
	}
	switch s {
	case 0:
		return plan{mode: "bulk", next: next}
	case 1:
		small := make([]byte, holSmall)
		return plan{mode: "rr", next: func() ([]byte, error) { return small, nil }, lat: lat}
	}
	return plan{mode: "bulk"}
}

// runStream runs one stream until stop and returns the payload bytes and
// messages the test counts.
func runStream(ctx context.Context, p plan, a transport.Association, s int, stop time.Time) (int64, int64, error) {
	if err := a.Send(ctx, s, []byte(p.mode)); err != nil {
		return 0, 0, err
	}
	var n int64
	for ; p.next != nil && time.Now().Before(stop); n++ {
		msg, err := p.next()
		if err != nil {
			return 0, n, err
		}
		t0 := time.Now()
		if err := a.Send(ctx, s, msg); err != nil {
			return 0, n, err
		}
		if p.mode == "rr" {
			if _, err := a.Recv(ctx, s); err != nil {
				return 0, n, err
			}
		}
		if p.lat != nil {
			p.lat.add(time.Since(t0))
		}
	}
	if err := a.Send(ctx, s, nil); err != nil {
		return 0, n, err
	}
	ack, err := a.Recv(ctx, s)
	if err != nil || len(ack) != 8 {
		return 0, n, fmt.Errorf("end of run: ack %d bytes: %v", len(ack), err)
	}
	got := int64(binary.BigEndian.Uint64(ack))
	if p.mode == "rr" {
		got *= 2 // request and response
	}
	return got, n, nil
}

// latencies collects round-trip times.
type latencies struct {
	mu sync.Mutex // guards d
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// summary returns p50, p99 and the maximum in milliseconds, or zeros
// without samples.
func (l *latencies) summary() (p50, p99, maxMs float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(l.d)
	ms := func(q float64) float64 {
		return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1e3
	}
	return ms(0.5), ms(0.99), ms(1)
}

// payload hands out messages: a fixed buffer, or successive chunks of a
// file (wrapping at its end), one reader per stream.
type payload struct {
	buf  []byte
	f    *os.File
	size int64
	mu   sync.Mutex // guards off and bufs
	off  int64
	bufs map[int][]byte
}

func openPayload(cfg Config) (*payload, error) {
	p := &payload{buf: make([]byte, cfg.Size), bufs: map[int][]byte{}}
	if cfg.File == "" {
		return p, nil
	}
	f, err := os.Open(cfg.File)
	if err != nil {
		return nil, fmt.Errorf("tperf: payload file: %w", err)
	}
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		f.Close()
		return nil, fmt.Errorf("tperf: payload file %s is empty or unreadable: %v", cfg.File, err)
	}
	p.f, p.size = f, st.Size()
	return p, nil
}

// next returns the payload for the next message on stream s.
func (p *payload) next(s int) ([]byte, error) {
	if p.f == nil {
		return p.buf, nil
	}
	p.mu.Lock()
	b, ok := p.bufs[s]
	if !ok {
		b = make([]byte, len(p.buf))
		p.bufs[s] = b
	}
	off := p.off
	p.off = (p.off + int64(len(b))) % p.size
	p.mu.Unlock()
	for n := 0; n < len(b); {
		k, err := p.f.ReadAt(b[n:], (off+int64(n))%p.size)
		n += k
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("tperf: payload file: %w", err)
		}
	}
	return b, nil
}

func (p *payload) close() {
	if p.f != nil {
		p.f.Close()
	}
}

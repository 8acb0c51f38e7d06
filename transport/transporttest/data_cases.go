package transporttest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// patternPeriod is prime so that reordered or duplicated frames of any
// power-of-two size show up as a mismatch.
const patternPeriod = 4093

// pattern returns n bytes derived from seed, stamped with n and seed.
func pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	blk := p[:min(n, patternPeriod)]
	for i := range blk {
		blk[i] = byte(seed*131 + uint64(i)*7 + uint64(i>>8))
	}
	for done := len(blk); done < n; done *= 2 {
		copy(p[done:], p[:done])
	}
	if n >= 16 {
		binary.BigEndian.PutUint64(p, uint64(n))
		binary.BigEndian.PutUint64(p[8:], seed)
	}
	return p
}

// sendAsync sends msgs on stream s in a goroutine and returns its error.
func sendAsync(ctx context.Context, a transport.Association, s int, msgs ...[]byte) <-chan error {
	ch := make(chan error, 1)
	go func() {
		for _, m := range msgs {
			if err := a.Send(ctx, s, m); err != nil {
				ch <- err
				return
			}
		}
		ch <- nil
	}()
	return ch
}

func testBoundaries(t *testing.T, s *suite) {
	d, l := s.pair(t, 2)
	sizes := []int{1, 2, 1000, 65535, 65536, 65537, 1 << 20}
	var msgs [][]byte
	for i, n := range sizes {
		msgs = append(msgs, pattern(n, uint64(i)))
	}
	for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
		ctx := timeoutCtx(t, s.opTimeout())
		errc := sendAsync(ctx, dir[0], 1, msgs...)
		for i, want := range msgs {
			got, err := dir[1].Recv(ctx, 1)
			if err != nil {
				t.Fatalf("Recv message %d (%d bytes): %v", i, len(want), err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("message %d: got %d bytes, want %d (content differs: %v)", i, len(got), len(want), len(got) == len(want))
			}
		}
		if err := <-errc; err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	big := pattern(64<<20, 99)
	for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
		ctx := timeoutCtx(t, s.opTimeout())
		errc := sendAsync(ctx, dir[0], 0, big)
		got, err := dir[1].Recv(ctx, 0)
		if err != nil {
			t.Fatalf("Recv 64 MiB: %v", err)
		}
		if !bytes.Equal(got, big) {
			t.Fatalf("64 MiB message: got %d bytes, content differs", len(got))
		}
		if err := <-errc; err != nil {
			t.Fatalf("Send 64 MiB: %v", err)
		}
	}
}

func testOrder(t *testing.T, s *suite) {
	const count = 10000
	d, l := s.pair(t, 2)
	ctx := timeoutCtx(t, s.opTimeout())
	for st := range 2 {
		errc := make(chan error, 1)
		go func() {
			var b [8]byte
			for i := range count {
				binary.BigEndian.PutUint64(b[:], uint64(i))
				if err := d.Send(ctx, st, b[:1+i%8]); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		for i := range count {
			got, err := l.Recv(ctx, st)
			if err != nil {
				t.Fatalf("stream %d: Recv %d: %v", st, i, err)
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(i))
			if !bytes.Equal(got, b[:1+i%8]) {
				t.Fatalf("stream %d: message %d = %x, want %x", st, i, got, b[:1+i%8])
			}
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// flood sends 64 KiB messages on stream s until ctx ends, reporting each
// completed Send on progress.
func flood(ctx context.Context, a transport.Association, s int, progress chan<- struct{}) {
	msg := pattern(64<<10, 7)
	for ctx.Err() == nil {
		if a.Send(ctx, s, msg) != nil {
			return
		}
		select {
		case progress <- struct{}{}:
		default:
		}
	}
}

// waitStall returns once progress has been quiet for quiet, or after limit.
func waitStall(progress <-chan struct{}, quiet, limit time.Duration) bool {
	end := time.After(limit)
	for {
		select {
		case <-progress:
		case <-time.After(quiet):
			return true
		case <-end:
			return false
		}
	}
}

func testIndependence(t *testing.T, s *suite) {
	const n = 4
	d, l := s.pair(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		d.Abort(errTestDone)
		l.Abort(errTestDone)
		wg.Wait()
	}()
	progress := make(chan struct{}, 1)
	wg.Go(func() { flood(ctx, d, 0, progress) })
	stalled := waitStall(progress, 300*time.Millisecond, 3*time.Second)
	t.Logf("stream 0 sender blocked on flow control: %v", stalled)
	errs := make(chan error, n)
	for st := 1; st < n; st++ {
		wg.Go(func() { errs <- d.Send(ctx, st, []byte(fmt.Sprintf("probe %d", st))) })
	}
	err := recvProbes(l, n, 3*time.Second)
	switch {
	case s.independent() && err != nil:
		t.Errorf("streams not independent: %v behind unread stream 0", err)
	case !s.independent() && err != nil:
		t.Logf("%s: head-of-line blocking confirmed: stream 1 stalled behind unread stream 0", s.tr.Name())
	case !s.independent():
		t.Errorf("%s declares IndependentStreams=false but streams 1..%d delivered behind unread stream 0", s.tr.Name(), n-1)
	}
}

// recvProbes receives one probe on each stream 1..n-1 within d.
func recvProbes(l transport.Association, n int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for st := 1; st < n; st++ {
		got, err := l.Recv(ctx, st)
		if err != nil {
			return fmt.Errorf("stream %d: %w", st, err)
		}
		if want := fmt.Sprintf("probe %d", st); string(got) != want {
			return fmt.Errorf("stream %d: got %q, want %q", st, got, want)
		}
	}
	return nil
}

func testConcurrentSenders(t *testing.T, s *suite) {
	const senders, each = 8, 300
	d, l := s.pair(t, 2)
	ctx := timeoutCtx(t, s.opTimeout())
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				if err := d.Send(ctx, 1, senderMsg(g, i)); err != nil {
					t.Errorf("sender %d: %v", g, err)
					return
				}
			}
		})
	}
	next := make([]int, senders)
	for range senders * each {
		m, err := l.Recv(ctx, 1)
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if len(m) < 16 {
			t.Fatalf("short message (%d bytes)", len(m))
		}
		g, i := int(binary.BigEndian.Uint64(m)>>32), int(uint32(binary.BigEndian.Uint64(m)))
		if g >= senders || i != next[g] || !bytes.Equal(m, senderMsg(g, i)) {
			t.Fatalf("message from sender %d seq %d (want seq %d) is damaged or out of order", g, i, next[g])
		}
		next[g]++
	}
	wg.Wait()
}

// senderMsg is message i of sender g; every 10th spans several frames.
func senderMsg(g, i int) []byte {
	n := 16 + (g*31+i*17)%2000
	if i%10 == 0 {
		n = 150 << 10
	}
	p := pattern(n, uint64(g)<<32|uint64(i))
	binary.BigEndian.PutUint64(p, uint64(g)<<32|uint64(i))
	return p
}

func testEcho(t *testing.T, s *suite) {
	const n, rounds = 4, 100
	d, l := s.pair(t, n)
	for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		var wg sync.WaitGroup
		for st := range n {
			wg.Go(func() { echoServer(ctx, dir[1], st, rounds) })
			wg.Go(func() {
				if err := echoClient(ctx, dir[0], st, rounds); err != nil {
					t.Errorf("stream %d: %v", st, err)
				}
			})
		}
		wg.Wait()
		cancel()
	}
}

func echoServer(ctx context.Context, a transport.Association, st, rounds int) {
	for range rounds {
		m, err := a.Recv(ctx, st)
		if err != nil || a.Send(ctx, st, m) != nil {
			return
		}
	}
}

func echoClient(ctx context.Context, a transport.Association, st, rounds int) error {
	for i := range rounds {
		req := pattern(100+(i*997)%30000, uint64(st*rounds+i))
		if err := a.Send(ctx, st, req); err != nil {
			return err
		}
		resp, err := a.Recv(ctx, st)
		if err != nil {
			return err
		}
		if !bytes.Equal(req, resp) {
			return errors.New("echo differs from request")
		}
	}
	return nil
}

// testConfidentiality: messages cross a path that records every byte, as
// a capture would. A transport built to encrypt (Options.Encrypted) must
// not put a message's bytes on the path in clear; one that is not must,
// which shows that the path saw the traffic.
func testConfidentiality(t *testing.T, s *suite) {
	lc, _ := listenCfg(t, 2, 2)
	ln := s.listen(t, lc)
	path := s.opts.BlackHole(t, s.tr, ln.Addr().String())
	if path.Tap == nil {
		t.Skip("the test path (Options.BlackHole) has no Tap to watch it with")
	}
	var mu sync.Mutex
	var seen bytes.Buffer
	path.Tap(func(p []byte) { mu.Lock(); seen.Write(p); mu.Unlock() })
	d, l := connectWith(t, ln, path.Dial, dialCfg(2, 2))
	msg := bytes.Repeat([]byte("a unit's input, which nobody on the path may read. "), 400)
	ctx := timeoutCtx(t, s.opTimeout())
	for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
		if err := dir[0].Send(ctx, 1, msg); err != nil {
			t.Fatalf("send: %v", err)
		}
		got, err := dir[1].Recv(ctx, 1)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("received %d bytes (%v), want the %d sent", len(got), err, len(msg))
		}
	}
	path.Tap(nil)
	mu.Lock()
	clear, n := bytes.Contains(seen.Bytes(), msg[:256]), seen.Len()
	mu.Unlock()
	if n < 2*len(msg) {
		t.Fatalf("the path saw %d bytes, fewer than the two messages' %d", n, 2*len(msg))
	}
	if clear == s.opts.Encrypted {
		t.Errorf("encrypted: %v, but a message's bytes on the path in clear: %v", s.opts.Encrypted, clear)
	}
}

package mux

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/braidhq/braid/transport/internal/stripes"
)

// countConn counts the bytes read from a link.
type countConn struct {
	*net.TCPConn
	n *atomic.Int64
}

func (c countConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestStripedSendStripes: blocks go out on the first SendStripes links
// only, and on as many as setSending says once it changes (a PollAll
// writer that looked at the count just before may take one block more),
// with either driver; every message arrives whole throughout. (The links
// carry nothing else: stripedConfig turns pings off.)
func TestStripedSendStripes(t *testing.T) {
	for _, d := range []Driver{PollAll, RoundRobin} {
		t.Run(d.String(), func(t *testing.T) {
			const links = 4
			var ca, cb []Conn
			read := make([]atomic.Int64, links) // by the receiver, from each link
			for i := range links {
				x, y := tcpPair(t)
				ca, cb = append(ca, x), append(cb, countConn{y, &read[i]})
			}
			cfg := stripedConfig(1)
			cfg.BlockSize, cfg.Driver, cfg.SendStripes = 1000, d, 2
			a, b := New(ca, cfg), New(cb, stripedConfig(1))
			t.Cleanup(func() { a.Abort(errors.New("test done")); b.Abort(errors.New("test done")) })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			msg := bytes.Repeat([]byte("0123456789"), 20000)
			// exchange sends a message and receives it.
			exchange := func() error {
				if err := a.Send(ctx, 0, msg); err != nil {
					return err
				}
				if got, err := b.Recv(ctx, 0); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("received %d bytes, %v", len(got), err)
				}
				return nil
			}
			// round sends messages, at least 4, until each of the first n
			// links has carried blocks, and says which links carried them.
			// (With PollAll a link's writer that the scheduler leaves out
			// takes no block: a loaded machine once sent 800 on three links
			// and none on link 0.) A first message goes unwatched: a
			// PollAll writer that looked at the count before it changed
			// may take one block more.
			round := func(n int) []bool {
				if err := exchange(); err != nil {
					t.Fatal(err)
				}
				var before [links]int64
				for i := range before {
					before[i] = read[i].Load()
				}
				used := make([]bool, links)
				for sent := 0; sent < 4 || slices.Contains(used[:n], false); sent++ {
					if err := exchange(); err != nil {
						t.Fatalf("after %d messages on %d links, those used %v: %v", sent, n, used, err)
					}
					for i := range used {
						used[i] = read[i].Load() > before[i]
					}
				}
				return used
			}
			check := func(n int) {
				t.Helper()
				if got := a.SendingStripes(); got != n {
					t.Errorf("SendingStripes() = %d, want %d", got, n)
				}
				for i, u := range round(n) {
					if u != (i < n) {
						t.Errorf("sending on %d links: link %d carried blocks: %v", n, i, u)
					}
				}
			}
			check(2)
			a.setSending(4)
			check(4)
			a.setSending(1)
			check(1)
		})
	}
}

// fakeLinks stands for the kernel's counters of an association's links:
// every sample finds bytes in flight held by the window, acknowledges
// 64 KiB more on each link read, at an RTT the test sets.
type fakeLinks struct {
	mu     sync.Mutex
	acked  uint64
	rtt    time.Duration
	broken bool
}

const fakePathRTT = 10 * time.Millisecond

func (f *fakeLinks) probe(net.Conn) (stripes.LinkSample, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acked += 64 << 10
	return stripes.LinkSample{RTT: f.rtt, MinRTT: fakePathRTT, BytesAcked: f.acked, Unacked: 10, Cwnd: 10, NotSent: 1}, !f.broken
}

func (f *fakeLinks) setRTT(rtt time.Duration) {
	f.mu.Lock()
	f.rtt = rtt
	f.mu.Unlock()
}

// TestStripeTuner runs the tuner on counters it is fed: held by the window
// with no queue, the count doubles to the links there are; on a standing
// queue it halves, then drops one an epoch, to where it started, and stays.
// The tuner's epochs run on a synctest bubble's clock, over memPair links.
func TestStripeTuner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLinks{rtt: fakePathRTT}
		cfg := stripedConfig(1)
		cfg.SendStripes, cfg.TuneStripes, cfg.Probe = 2, true, f.probe
		var ca, cb []Conn
		for range 6 {
			x, y := memPair()
			ca, cb = append(ca, x), append(cb, y)
		}
		a, b := New(ca, cfg), New(cb, stripedConfig(1))
		defer func() { a.Abort(errors.New("test done")); b.Abort(errors.New("test done")) }()
		// waitFor waits for the count to reach want, looking every
		// millisecond, and fails if it moves the other way meanwhile.
		waitFor := func(want int) {
			t.Helper()
			seen := []int{a.SendingStripes()}
			deadline := time.Now().Add(100 * stripes.MinEpoch)
			for seen[len(seen)-1] != want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
				if n, last := a.SendingStripes(), seen[len(seen)-1]; n != last {
					seen = append(seen, n)
					if (n > last) != (want > seen[0]) {
						t.Fatalf("stripes went %v on the way to %d", seen, want)
					}
				}
			}
			if seen[len(seen)-1] != want {
				t.Fatalf("stripes went %v; want them at %d", seen, want)
			}
		}
		waitFor(6)
		f.setRTT(2 * fakePathRTT)
		waitFor(2)
		time.Sleep(3 * stripes.MinEpoch)
		if n := a.SendingStripes(); n != 2 {
			t.Errorf("SendingStripes() = %d three epochs into the queue, want the 2 it started with", n)
		}
	})
}

// TestStripeTunerUnreadable: where the links' counters cannot be read
// (another OS, a peer on this host), the count stays where it started.
func TestStripeTunerUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLinks{rtt: fakePathRTT, broken: true}
		cfg := stripedConfig(1)
		cfg.SendStripes, cfg.TuneStripes, cfg.Probe = 2, true, f.probe
		var ca []Conn
		for range 4 {
			x, _ := memPair()
			ca = append(ca, x)
		}
		a := New(ca, cfg)
		defer a.Abort(errors.New("test done"))
		time.Sleep(3 * stripes.MinEpoch)
		if n := a.SendingStripes(); n != 2 {
			t.Errorf("SendingStripes() = %d with unreadable links, want 2", n)
		}
	})
}

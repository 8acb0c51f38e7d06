package transporttest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/transport"
)

// UpBed brings up the WAN test bed of spec (package netem) for a test that
// needs it, and takes it down when t ends; while another test holds the
// bed, it waits its turn (up to 5 minutes). Without root, on another OS, or
// if the turn never comes, t skips, saying why.
func UpBed(t *testing.T, spec string) *netem.Bed {
	t.Helper()
	if err := netem.Check(); err != nil {
		t.Skipf("needs the WAN test bed: %v", err)
	}
	s, err := netem.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	bed, err := netem.Up(s, netem.Options{Wait: 5 * time.Minute})
	if errors.Is(err, netem.ErrBusy) {
		t.Skipf("the WAN test bed is in use: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bed.Close() })
	return bed
}

// AcrossBed connects an association of tr across a bed from UpBed: the
// listener in braid-a on all its addresses (0.0.0.0:port), the dialer in
// braid-b dialing path 0's address. Both ends are aborted when t ends.
func AcrossBed(t *testing.T, tr transport.Transport, port int) (d, l transport.Association) {
	t.Helper()
	return AcrossBedWith(t, tr, port, nil)
}

// AcrossBedWith is AcrossBed with the dial's config changed by edit, if
// not nil.
func AcrossBedWith(t *testing.T, tr transport.Transport, port int, edit func(*transport.DialConfig)) (d, l transport.Association) {
	t.Helper()
	lc, _ := listenCfg(t, 1, 1)
	var ln transport.Listener
	if err := netem.InNS(netem.NSA, func() (err error) {
		ln, err = tr.Listen(net.JoinHostPort("0.0.0.0", strconv.Itoa(port)), lc)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a0, _ := netem.PathAddrs(0)
	dial := func(ctx context.Context, cfg transport.DialConfig) (a transport.Association, err error) {
		err = netem.InNS(netem.NSB, func() error {
			a, err = tr.Dial(ctx, net.JoinHostPort(a0.String(), strconv.Itoa(port)), cfg)
			return err
		})
		return a, err
	}
	dc := dialCfg(1, 1)
	if edit != nil {
		edit(&dc)
	}
	return connectWith(t, ln, dial, dc)
}

// PathShares sends msg from d to l on stream 0 and returns the share of the
// IP bytes that each of bed's paths carried braid-b to braid-a meanwhile.
func PathShares(t *testing.T, bed *netem.Bed, d, l transport.Association, msg []byte) []float64 {
	t.Helper()
	ctx := timeoutCtx(t, 60*time.Second)
	before := bed.Stats()
	if err := d.Send(ctx, 0, msg); err != nil {
		t.Fatal(err)
	}
	got, err := l.Recv(ctx, 0)
	if err != nil || string(got) != string(msg) {
		t.Fatalf("received %d bytes, %v; want the %d sent", len(got), err, len(msg))
	}
	after := bed.Stats()
	var bytes []float64
	var total float64
	for i := range after {
		n := float64(after[i].BA.InBytes - before[i].BA.InBytes)
		bytes, total = append(bytes, n), total+n
	}
	for i := range bytes {
		bytes[i] /= total
	}
	return bytes
}

// SteadyCount runs run and returns the median of count, read every 20 ms,
// over run's second half: what a tuner settled on, not the value it
// happened to hold at the end, which one late epoch can move by one.
func SteadyCount(count func() int, run func()) int {
	done := make(chan struct{})
	samples := make(chan []int, 1)
	go func() {
		var got []int
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				got = append(got, count())
			case <-done:
				samples <- append(got, count())
				return
			}
		}
	}()
	func() {
		defer close(done) // also when run fails its test
		run()
	}()
	got := <-samples
	got = got[len(got)/2:]
	slices.Sort(got)
	return got[len(got)/2]
}

// SendBulk sends n bytes from d to l on stream 0 in messages of 1 MiB
// (less 1 MiB mod 5) and checks that they arrive whole, in a minute at
// most.
func SendBulk(t *testing.T, d, l transport.Association, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msg := bytes.Repeat([]byte("bulk!"), 1<<20/5)
	go func() {
		for range n / len(msg) {
			if err := d.Send(ctx, 0, msg); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range n / len(msg) {
		got, err := l.Recv(ctx, 0)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("received %d bytes (err %v), want the %d sent", len(got), err, len(msg))
		}
	}
}

package ksctp_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/netem/relay"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ksctp"
	"github.com/braidhq/braid/transport/transporttest"
)

func skipWithoutSCTP(t *testing.T) {
	t.Helper()
	if !ksctp.Available() {
		t.Skip("kernel has no SCTP; run `make vm-test`")
	}
}

func TestConformance(t *testing.T) {
	skipWithoutSCTP(t)
	transporttest.Run(t, func(t *testing.T) transport.Transport {
		return ksctp.New(ksctp.Config{})
	}, "127.0.0.1:0", transporttest.Options{Garbage: garbage, BlackHole: encapsPath, NarrowBlackHole: true,
		Timeout: 90 * time.Second}) // TCG emulation is ~100x slower
}

// encapsPath is the Liveness/BlackHole path for kernel SCTP, which a TCP
// or UDP relay cannot carry as it is: the dialer sends SCTP over UDP (RFC
// 6951) to a relay that forwards it to this kernel's encapsulation port
// (net.sctp.udp_port, which vm/run-tests.sh sets); the listening kernel
// answers through the relay.
func encapsPath(t testing.TB, _ transport.Transport, listenAddr string) transporttest.Path {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/sctp/udp_port")
	port, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || port == 0 {
		t.Skipf("kernel does not receive SCTP over UDP (net.sctp.udp_port %q, %v)", b, err)
	}
	r, err := relay.New(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	_, rp, _ := net.SplitHostPort(r.Addr())
	encaps, _ := strconv.Atoi(rp)
	tr := ksctp.New(ksctp.Config{UDPEncapsPort: encaps})
	return transporttest.Path{
		Dial: func(ctx context.Context, cfg transport.DialConfig) (transport.Association, error) {
			return tr.Dial(ctx, listenAddr, cfg)
		},
		Block: r.Block,
		Tap:   r.Tap,
	}
}

// garbage connects with a plain SCTP socket and sends junk on several
// streams, the way a confused peer would.
func garbage(addr string) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_SCTP)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return err
	}
	for _, junk := range []string{"GET / HTTP/1.0\r\n\r\n", "BRD1\x09junk", strings.Repeat("\xff", 600)} {
		if _, err := unix.Write(fd, []byte(junk)); err != nil {
			return err
		}
	}
	return nil
}

// TestInitMsgStreams checks that the SCTP stream count requested with
// SCTP_INITMSG bounds the negotiated count.
func TestInitMsgStreams(t *testing.T) {
	skipWithoutSCTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, l := pair(t, ctx, ksctp.Config{Streams: 3}, 8)
	if d.Streams() != 3 || l.Streams() != 3 {
		t.Fatalf("streams: dialer %d, listener %d, want 3 (SCTP_INITMSG)", d.Streams(), l.Streams())
	}
	if err := d.Send(ctx, 2, []byte("last")); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Recv(ctx, 2); err != nil || string(got) != "last" {
		t.Fatalf("Recv = %q, %v", got, err)
	}
	if err := d.Send(ctx, 3, []byte("x")); !errors.Is(err, transport.ErrBadStream) {
		t.Fatalf("Send on stream 3: %v, want ErrBadStream", err)
	}
}

// TestBigMessages sends messages around and far above the fragment size on
// two streams at once, with a small partial delivery point so that the
// kernel hands every fragment over in pieces.
func TestBigMessages(t *testing.T) {
	skipWithoutSCTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, l := pair(t, ctx, ksctp.Config{PartialDeliveryPoint: *pdPoint}, 2)
	sizes := []int{ksctp.FragmentSize - 1, ksctp.FragmentSize, ksctp.FragmentSize + 1, 3<<20 + 5, 100 << 10}
	errc := make(chan error, 2)
	for s := range 2 {
		go func() {
			for i, n := range sizes {
				if err := d.Send(ctx, s, msg(n, byte(s*16+i))); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for s := range 2 {
		for i, n := range sizes {
			got, err := l.Recv(ctx, s)
			if err != nil {
				t.Fatalf("stream %d message %d: %v", s, i, err)
			}
			if !bytes.Equal(got, msg(n, byte(s*16+i))) {
				t.Fatalf("stream %d message %d: %d bytes, corrupt or wrong size %d", s, i, len(got), n)
			}
		}
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

var pdPoint = flag.Int("pd", 0, "SCTP_PARTIAL_DELIVERY_POINT for TestBigMessages")

func msg(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i>>9)
	}
	return b
}

// pair connects a dialer to a listener that use cfg, asking for n streams.
func pair(t *testing.T, ctx context.Context, cfg ksctp.Config, n int) (d, l transport.Association) {
	t.Helper()
	tr := ksctp.New(cfg)
	secret := []byte("ksctp test")
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: n, MaxStreams: n, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	type res struct {
		a   transport.Association
		err error
	}
	ch := make(chan res, 1)
	go func() { a, err := ln.Accept(ctx); ch <- res{a, err} }()
	d, err = tr.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: secret, RecStreams: n, MaxStreams: n})
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { d.Close(); r.a.Close() })
	return d, r.a
}

package transports

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ksctp"
	"github.com/braidhq/braid/transport/sctp"
)

// TestAutoMixedCluster checks that --sctp-stack auto on a host with kernel
// SCTP associates with every kind of peer under the defaults (no sysctl):
// natively with another auto or kernel-stack host, over UDP with a
// userspace-stack one, in either role. Run it with `make vm-test`.
func TestAutoMixedCluster(t *testing.T) {
	if !ksctp.Available() {
		t.Skip("kernel has no SCTP; run `make vm-test`")
	}
	auto, err := New("sctp", Options{SCTPStack: StackAuto})
	if err != nil {
		t.Fatal(err)
	}
	user := sctp.New(sctp.Config{})
	kernel := ksctp.New(ksctp.Config{})
	for _, tc := range []struct {
		name             string
		listener, dialer transport.Transport
		network          string // of the dialer's RemoteAddr: how they met
	}{
		{"auto-auto", auto, auto, "sctp"},
		{"kernel-dials-auto", auto, kernel, "sctp"},
		{"user-dials-auto", auto, user, "udp"},
		{"auto-dials-user", user, auto, "udp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, l := associate(t, tc.listener, tc.dialer)
			if got := d.RemoteAddr().Network(); got != tc.network {
				t.Errorf("associated over %s (%s), want %s", got, d.RemoteAddr(), tc.network)
			}
			exchange(t, d, l)
		})
	}
}

func associate(t *testing.T, listener, dialer transport.Transport) (d, l transport.Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	secret := []byte("auto")
	ln, err := listener.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: 2, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan transport.Association, 1)
	go func() {
		a, err := ln.Accept(ctx)
		if err != nil {
			t.Errorf("Accept: %v", err)
		}
		acc <- a
	}()
	d, err = dialer.Dial(ctx, ln.Addr().String(), transport.DialConfig{Secret: secret, RecStreams: 2})
	if err != nil {
		t.Fatalf("Dial %s: %v", ln.Addr(), err)
	}
	t.Cleanup(func() { d.Abort(errors.New("test over")) })
	if l = <-acc; l == nil {
		t.FailNow()
	}
	t.Cleanup(func() { l.Abort(errors.New("test over")) })
	return d, l
}

// exchange sends a short and a fragmented message each way on each stream.
func exchange(t *testing.T, d, l transport.Association) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for s := range d.Streams() {
		for _, dir := range [][2]transport.Association{{d, l}, {l, d}} {
			msgs := [][]byte{fmt.Appendf(nil, "stream %d", s), bytes.Repeat([]byte{byte(s + 1)}, 300<<10)}
			errc := make(chan error, 1)
			go func() {
				for _, m := range msgs {
					if err := dir[0].Send(ctx, s, m); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			for i, want := range msgs {
				if got, err := dir[1].Recv(ctx, s); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("stream %d message %d: %d bytes, %v; want %d bytes", s, i, len(got), err, len(want))
				}
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDualListenerFails checks that a dual listener whose one stack fails
// says so from Accept instead of serving the other stack's peers only.
func TestDualListenerFails(t *testing.T) {
	lc := transport.ListenConfig{Secret: []byte("s"), Name: "t", RecStreams: 1, MaxStreams: 1}
	a, err := sctp.New(sctp.Config{}).Listen("127.0.0.1:0", lc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sctp.New(sctp.Config{}).Listen("127.0.0.1:0", lc)
	if err != nil {
		t.Fatal(err)
	}
	d := newDualListener(a, b)
	defer d.Close()
	b.Close() // as if the kernel's listener broke
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = d.Accept(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Accept after one listener failed: %v; want that listener's error", err)
	}
	t.Log(err)
}

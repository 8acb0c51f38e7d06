package sctp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/sctp"
)

// BenchmarkDirection sends 64 KiB messages on one stream from the dialer
// (received through the listener's UDP demultiplexer) and from the
// listener (received on the dialer's own socket).
func BenchmarkDirection(b *testing.B) {
	for _, fromDialer := range []bool{true, false} {
		name := map[bool]string{true: "dialer-to-listener", false: "listener-to-dialer"}[fromDialer]
		b.Run(name, func(b *testing.B) {
			benchBulk(b, sctp.Config{}, 1, fromDialer)
		})
	}
}

// BenchmarkCPU reports the CPU time per payload byte (cpu-ns/B, which is
// CPU seconds per GB) of 64 KiB messages spread over 4 streams, at the
// loopback MTU (8192) and at an Ethernet one (1452), in both directions.
func BenchmarkCPU(b *testing.B) {
	for _, mtu := range []int{8192, 32768, 65507} {
		for _, fromDialer := range []bool{true, false} {
			name := map[bool]string{true: "dialer-to-listener", false: "listener-to-dialer"}[fromDialer]
			b.Run(fmt.Sprintf("mtu=%d/%s", mtu, name), func(b *testing.B) {
				benchBulk(b, sctp.Config{MTU: mtu}, 4, fromDialer)
			})
		}
	}
}

// BenchmarkCPUDTLS is BenchmarkCPU over DTLS (Config.TLS on), at an
// Ethernet MTU (the emulated WAN's) and at the largest packet a DTLS
// record carries.
func BenchmarkCPUDTLS(b *testing.B) {
	for _, mtu := range []int{1500, 8192} {
		for _, fromDialer := range []bool{true, false} {
			name := map[bool]string{true: "dialer-to-listener", false: "listener-to-dialer"}[fromDialer]
			b.Run(fmt.Sprintf("mtu=%d/%s", mtu, name), func(b *testing.B) {
				benchBulk(b, sctp.Config{TLS: transport.TLSOn, MTU: mtu}, 4, fromDialer)
			})
		}
	}
}

// benchBulk sends 64 KiB messages round-robin on n streams from one end of
// a fresh pair to the other and reports CPU time per byte.
func benchBulk(b *testing.B, cfg sctp.Config, n int, fromDialer bool) {
	d, l := pair(b, sctp.New(cfg), n)
	src, dst := d, l
	if !fromDialer {
		src, dst = l, d
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for s := range n {
		wg.Go(func() {
			for {
				if _, err := dst.Recv(ctx, s); err != nil {
					return
				}
			}
		})
	}
	defer func() { cancel(); d.Abort(nil); l.Abort(nil); wg.Wait() }()
	msg := make([]byte, 64<<10)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	cpu := startCPU()
	i := 0
	for b.Loop() {
		if err := src.Send(ctx, i%n, msg); err != nil {
			b.Fatal(err)
		}
		i++
	}
	cpu.report(b, int64(b.N)*int64(len(msg)))
}

// pair returns a dialed association and its accepted peer with n streams
// each way.
func pair(b testing.TB, tr transport.Transport, n int) (d, l transport.Association) {
	secret := []byte("s")
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret, RecStreams: n, MaxStreams: n})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	ch := make(chan transport.Association, 1)
	go func() {
		a, _ := ln.Accept(context.Background())
		ch <- a
	}()
	d, err = tr.Dial(context.Background(), ln.Addr().String(), transport.DialConfig{Secret: secret, RecStreams: n, MaxStreams: n})
	if err != nil {
		b.Fatal(err)
	}
	return d, <-ch
}

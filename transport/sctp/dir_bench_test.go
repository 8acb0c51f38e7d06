package sctp_test

import (
	"context"
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
			d, l := pair(b, sctp.New(sctp.Config{}))
			src, dst := d, l
			if !fromDialer {
				src, dst = l, d
			}
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					if _, err := dst.Recv(ctx, 0); err != nil {
						return
					}
				}
			})
			defer func() { cancel(); d.Abort(nil); l.Abort(nil); wg.Wait() }()
			msg := make([]byte, 64<<10)
			b.SetBytes(int64(len(msg)))
			cpu := startCPU()
			for b.Loop() {
				if err := src.Send(ctx, 0, msg); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b, int64(b.N)*int64(len(msg)))
		})
	}
}

func pair(b *testing.B, tr transport.Transport) (d, l transport.Association) {
	secret := []byte("s")
	ln, err := tr.Listen("127.0.0.1:0", transport.ListenConfig{Secret: secret})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	ch := make(chan transport.Association, 1)
	go func() {
		a, _ := ln.Accept(context.Background())
		ch <- a
	}()
	d, err = tr.Dial(context.Background(), ln.Addr().String(), transport.DialConfig{Secret: secret})
	if err != nil {
		b.Fatal(err)
	}
	return d, <-ch
}

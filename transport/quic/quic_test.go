package quic_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/quic"
	"github.com/braidhq/braid/transport/transporttest"
	quicgo "github.com/quic-go/quic-go"
)

func newTransport(testing.TB) transport.Transport { return quic.New(quic.Config{}) }

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport { return newTransport(t) },
		"127.0.0.1:0", transporttest.Options{
			Garbage: udpGarbage, Timeout: 60 * time.Second,
			Channel: quicChannel, Attacks: quicAttacks,
			Encrypted: true, // always: QUIC has no plaintext mode
		})
}

func BenchmarkTransport(b *testing.B) {
	transporttest.Bench(b, func(b *testing.B) transport.Transport { return newTransport(b) }, "127.0.0.1:0")
}

// udpGarbage sends junk datagrams to a listener, each from its own socket:
// random bytes, a runt, a fake QUIC long header, and an oversize datagram.
func udpGarbage(addr string) error {
	random := make([]byte, 1300)
	_, _ = rand.Read(random)
	long := append([]byte{0xc0, 0, 0, 0, 1, 8}, random[:1200]...)
	for _, j := range [][]byte{random, {1, 2, 3}, long, make([]byte, 9000)} {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		_, _ = c.Write(j)
		c.Close()
	}
	return nil
}

// quicAttacks are the DoS attackers: QUIC connections that finish TLS but
// not the braid handshake.
var quicAttacks = transporttest.Attacks{Silent: quicSilent, Unauthenticated: quicUnauthenticated}

// quicChannel opens a connection and its first stream, the control stream,
// without the braid handshake.
func quicChannel(ctx context.Context, addr string) (transport.HandshakeConn, func(), error) {
	qc, err := quicgo.DialAddr(ctx, addr, attackerTLS(), &quicgo.Config{})
	if err != nil {
		return nil, nil, err
	}
	st, err := qc.OpenStreamSync(ctx)
	if err != nil {
		_ = qc.CloseWithError(1, "")
		return nil, nil, err
	}
	return transporttest.PrefixConn(st), func() { _ = qc.CloseWithError(1, "") }, nil
}

func attackerTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"braid/1"}, MinVersion: tls.VersionTLS13}
}

// quicSilent opens n connections that finish TLS and send nothing more.
func quicSilent(ctx context.Context, addr string, n int) (func(), error) {
	return quicPeers(ctx, addr, n, nil)
}

// quicUnauthenticated opens n connections that send a well-formed hello on
// the control stream (and never answer the challenge), then open 16 more
// streams and write on each until flow control stops them.
func quicUnauthenticated(ctx context.Context, addr string, n int) (func(), error) {
	junk := make([]byte, 1<<20)
	var writers sync.WaitGroup
	stop, err := quicPeers(ctx, addr, n, func(qc *quicgo.Conn) error {
		ctl, err := qc.OpenStreamSync(ctx)
		if err != nil {
			return err
		}
		if _, err := ctl.Write(transporttest.Hello()); err != nil {
			return err
		}
		for range 16 {
			st, err := qc.OpenStream()
			if err != nil {
				return nil // the listener cut us off: fine
			}
			writers.Go(func() {
				for {
					if _, err := st.Write(junk); err != nil {
						return
					}
				}
			})
		}
		return nil
	})
	if err != nil {
		writers.Wait()
		return nil, err
	}
	return func() { stop(); writers.Wait() }, nil
}

// quicPeers opens n connections from one UDP socket and runs act on each;
// stop closes them.
func quicPeers(ctx context.Context, addr string, n int, act func(*quicgo.Conn) error) (func(), error) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	qt := &quicgo.Transport{Conn: pc}
	stop := func() { qt.Close(); pc.Close() }
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		stop()
		return nil, err
	}
	for range n {
		qc, err := qt.Dial(ctx, ua, attackerTLS(), &quicgo.Config{MaxIdleTimeout: 30 * time.Second})
		if err == nil && act != nil {
			err = act(qc)
		}
		if err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

package quic_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/clustertls"
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
			Intercept: quicIntercept,
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

// quicAttacks are the DoS attackers: strangers, whom a listener refuses at
// their certificate. None can open a stream.
var quicAttacks = transporttest.Attacks{Silent: quicSilent, Unauthenticated: quicUnauthenticated}

// quicChannel opens a connection and its first stream, the control stream,
// without the braid handshake. It presents the cluster's certificate: only
// a holder of the secret gets as far as the braid handshake.
func quicChannel(ctx context.Context, addr string) (transport.HandshakeConn, func(), error) {
	cfgs, err := clustertls.For(transporttest.Secret())
	if err != nil {
		return nil, nil, err
	}
	tc := cfgs.Client.Clone()
	tc.NextProtos = []string{"braid/1"}
	qc, err := quicgo.DialAddr(ctx, addr, tc, &quicgo.Config{})
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

// strangerTLS is an attacker's TLS: a certificate as well formed as a
// member's, from a secret of its own, and trust in any listener.
func strangerTLS() (*tls.Config, error) {
	cfgs, err := clustertls.For([]byte("an attacker's own secret"))
	if err != nil {
		return nil, err
	}
	tc := cfgs.Client.Clone()
	tc.InsecureSkipVerify = true
	tc.NextProtos = []string{"braid/1"}
	tc.CurvePreferences = []tls.CurveID{tls.X25519} // the cheapest key share, and a ClientHello that fits one Initial
	return tc, nil
}

// quicUnauthenticated opens n connections that finish the handshake with
// a stranger's certificate (the listener refuses it), and at once send a
// well-formed hello on the control stream and open 16 more streams, writing
// on each until the connection ends.
func quicUnauthenticated(ctx context.Context, addr string, n int) (func(), error) {
	junk := make([]byte, 1<<20)
	var writers sync.WaitGroup
	stop, err := quicPeers(ctx, addr, n, func(qc *quicgo.Conn) {
		ctl, err := qc.OpenStreamSync(ctx)
		if err != nil {
			return // the listener cut us off: it should
		}
		_, _ = ctl.Write(transporttest.Hello())
		for range 16 {
			st, err := qc.OpenStream()
			if err != nil {
				return
			}
			writers.Go(func() {
				for {
					if _, err := st.Write(junk); err != nil {
						return
					}
				}
			})
		}
	})
	if err != nil {
		writers.Wait()
		return nil, err
	}
	return func() { stop(); writers.Wait() }, nil
}

// quicPeers opens n connections with a stranger's certificate from one
// UDP socket and runs act on each the listener has not refused before the
// handshake ended on this side; stop closes them.
func quicPeers(ctx context.Context, addr string, n int, act func(*quicgo.Conn)) (func(), error) {
	tc, err := strangerTLS()
	if err != nil {
		return nil, err
	}
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
		qc, err := qt.Dial(ctx, ua, tc, &quicgo.Config{MaxIdleTimeout: 30 * time.Second})
		var refused *quicgo.TransportError
		switch {
		case errors.As(err, &refused):
		case err != nil:
			stop()
			return nil, err
		default:
			act(qc)
		}
	}
	return stop, nil
}

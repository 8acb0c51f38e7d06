package quic_test

import (
	"crypto/rand"
	"net"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/quic"
	"github.com/braidhq/braid/transport/transporttest"
)

func newTransport(testing.TB) transport.Transport { return quic.New(quic.Config{}) }

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport { return newTransport(t) },
		"127.0.0.1:0", transporttest.Options{Garbage: udpGarbage, Timeout: 60 * time.Second})
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

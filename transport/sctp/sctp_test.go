package sctp_test

import (
	"crypto/rand"
	"net"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/sctp"
	"github.com/braidhq/braid/transport/transporttest"
)

func newTransport(testing.TB) transport.Transport { return sctp.New(sctp.Config{}) }

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport { return newTransport(t) },
		"127.0.0.1:0", transporttest.Options{Garbage: udpGarbage, Timeout: 60 * time.Second})
}

func BenchmarkTransport(b *testing.B) {
	transporttest.Bench(b, func(b *testing.B) transport.Transport { return newTransport(b) }, "127.0.0.1:0")
}

// udpGarbage sends junk datagrams to a listener: random bytes, a runt, an
// INIT with a bad checksum, and an oversize datagram, each from its own
// socket.
func udpGarbage(addr string) error {
	random := make([]byte, 1500)
	_, _ = rand.Read(random)
	init := make([]byte, 32)
	copy(init, []byte{0x13, 0x88, 0x13, 0x88, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 0, 0, 20})
	junk := [][]byte{random, {1, 2, 3}, init, make([]byte, 9000), []byte("BRD1 hello")}
	for _, j := range junk {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		_, _ = c.Write(j)
		c.Close()
	}
	return nil
}

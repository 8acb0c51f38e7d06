package ptcp_test

import (
	"testing"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/transporttest"
)

func newT(t testing.TB, cfg ptcp.Config) transport.Transport {
	tr, err := ptcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestConformance(t *testing.T) {
	for _, driver := range []string{ptcp.DriverPollAll, ptcp.DriverRR} {
		t.Run(driver, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T) transport.Transport {
				return newT(t, ptcp.Config{Driver: driver})
			}, "127.0.0.1:0", transporttest.Options{
				Garbage: transporttest.TCPGarbage,
				Channel: transporttest.TCPChannel,
				Attacks: transporttest.TCPAttacks,
			})
		})
	}
}

// TestConformanceTLS runs the suite with TLS keyed to the cluster secret
// on loopback too, with small blocks so that every message is striped.
func TestConformanceTLS(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport {
		return newT(t, ptcp.Config{TLS: transport.TLSOn, BlockSize: 4 << 10})
	}, "127.0.0.1:0", transporttest.Options{
		Garbage:   transporttest.TCPGarbage,
		Attacks:   transporttest.TCPAttacks,
		Encrypted: true,
	})
}

func BenchmarkTransport(b *testing.B) {
	transporttest.Bench(b, func(b *testing.B) transport.Transport {
		return newT(b, ptcp.Config{})
	}, "127.0.0.1:0")
}

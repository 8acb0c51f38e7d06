package ptcp_test

import (
	"strings"
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

// TestBadConfig: a configuration no association could use is refused with
// a reason, not clamped.
func TestBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  ptcp.Config
		want string
	}{
		{ptcp.Config{RecStripes: 17}, "17 stripes: want 1 to 16"},
		{ptcp.Config{MaxStripes: -1}, "-1 maximum stripes"},
		{ptcp.Config{Driver: "fastest"}, `driver "fastest": want rr or pollall`},
	} {
		if _, err := ptcp.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", c.cfg, err, c.want)
		}
	}
	if _, err := ptcp.New(ptcp.Config{RecStripes: 16, MaxStripes: 1, Driver: ptcp.DriverRR}); err != nil {
		t.Errorf("a good config refused: %v", err)
	}
}

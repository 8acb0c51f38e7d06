package tcp_test

import (
	"testing"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcp"
	"github.com/braidhq/braid/transport/transporttest"
)

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport {
		return tcp.New(tcp.Config{})
	}, "127.0.0.1:0", transporttest.Options{
		Garbage: transporttest.TCPGarbage,
		Channel: transporttest.TCPChannel,
		Attacks: transporttest.TCPAttacks,
	})
}

// TestConformanceTLS runs the suite with TLS keyed to the cluster secret
// on loopback too (transport.TLSOn); the forged-MAC case needs a plaintext
// channel and skips.
func TestConformanceTLS(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport {
		return tcp.New(tcp.Config{TLS: transport.TLSOn})
	}, "127.0.0.1:0", transporttest.Options{
		Garbage:   transporttest.TCPGarbage,
		Attacks:   transporttest.TCPAttacks,
		Encrypted: true,
		Intercept: transporttest.TLSIntercept,
	})
}

// TestPlainReconnectingAcrossBed is the WAN reconnecting case
// (transporttest's DoS/WAN/Reconnecting) against a plaintext listener,
// where only braid's own handshake (no TLS certificate) proves the dialer.
func TestPlainReconnectingAcrossBed(t *testing.T) {
	transporttest.AttackAcrossBed(t, tcp.New(tcp.Config{TLS: transport.TLSOff}), transporttest.TCPReconnecting,
		transporttest.ReconnectingPeers, "Reconnecting")
}

func BenchmarkTransport(b *testing.B) {
	transporttest.Bench(b, func(b *testing.B) transport.Transport {
		return tcp.New(tcp.Config{})
	}, "127.0.0.1:0")
}

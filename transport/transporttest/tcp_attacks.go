package transporttest

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"

	"github.com/braidhq/braid/transport"
)

// TCPAttacks are the DoS attackers for transports whose first channel is a
// TCP connection carrying length-prefixed handshake messages (tcp, tcpn).
var TCPAttacks = Attacks{Silent: TCPSilent, Unauthenticated: TCPUnauthenticated, Reconnecting: TCPReconnecting}

// TCPChannel is an Options.Channel hook for tcp and tcpn: a TCP connection
// carrying length-prefixed handshake messages.
func TCPChannel(ctx context.Context, addr string) (transport.HandshakeConn, func(), error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return PrefixConn(c), func() { c.Close() }, nil
}

// TCPSilent opens n TCP connections to addr that never send a byte.
func TCPSilent(ctx context.Context, addr string, n int) (func(), error) {
	return tcpPeers(ctx, addr, n, nil)
}

// TCPUnauthenticated opens n TCP connections to addr, each sending a
// well-formed braid hello and then nothing (it cannot answer the challenge
// without the secret).
func TCPUnauthenticated(ctx context.Context, addr string, n int) (func(), error) {
	return tcpPeers(ctx, addr, n, Hello)
}

// TCPReconnecting keeps n TCP connections to addr open, sending nothing,
// and opens each again as soon as the listener drops it (its read ends),
// until stop, ctx's end or ReconnectMax connections in all.
func TCPReconnecting(ctx context.Context, addr string, n int) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var opened atomic.Int64
	first := make(chan error, n)
	for range n {
		wg.Go(func() {
			var d net.Dialer
			for i := 0; ctx.Err() == nil && opened.Add(1) <= ReconnectMax; i++ {
				c, err := d.DialContext(ctx, "tcp", addr)
				if i == 0 {
					first <- err
				}
				if err != nil {
					return
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				_, _ = c.Read(make([]byte, 1)) // until the listener drops it
				stop()
				c.Close()
			}
		})
	}
	stop := func() {
		cancel()
		wg.Wait()
	}
	for range n {
		if err := <-first; err != nil {
			stop()
			return nil, err
		}
	}
	return stop, nil
}

// tcpPeers opens n connections, writing first() on each if set; stop
// closes them.
func tcpPeers(ctx context.Context, addr string, n int, first func() []byte) (func(), error) {
	var mu sync.Mutex
	var conns []net.Conn
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
		conns = nil
	}
	var d net.Dialer
	for range n {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			stop()
			return nil, err
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		if first != nil {
			_, _ = c.Write(first()) // the listener may have dropped us already
		}
	}
	return stop, nil
}

// Hello is a well-formed braid hello (transport/handshake_offer.go's
// layout) with a two-byte length prefix, as an attacker who knows no secret
// can send.
func Hello() []byte {
	b := []byte("BRD2\x01")
	var nonce [32]byte
	rand.Read(nonce[:])
	b = append(b, nonce[:]...)
	b = binary.BigEndian.AppendUint16(b, 1)    // rec
	b = binary.BigEndian.AppendUint16(b, 2)    // max
	b = binary.BigEndian.AppendUint32(b, 5000) // liveness, ms
	b = binary.BigEndian.AppendUint64(b, 1)    // epoch
	b = append(b, 8)
	b = append(b, "attacker"...)
	b = append(b, 0) // id
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}

package transporttest

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// UDPFlood sends datagram to addr from n UDP sockets of their own, in
// turn, FloodRate datagrams a second in all, until stop, ctx's end or
// FloodMax datagrams; what the listener answers is read and dropped. It is
// the Attacks.Flood of a transport over UDP, given the datagram that opens
// its handshake (a forger replays one it captured).
func UDPFlood(ctx context.Context, addr string, n int, datagram []byte) (func(), error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	var socks []*net.UDPConn
	for range n {
		c, err := net.DialUDP("udp", nil, ua)
		if err != nil {
			for _, c := range socks {
				c.Close()
			}
			return nil, err
		}
		socks = append(socks, c)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range socks {
		wg.Go(func() { drainUDP(c) })
	}
	wg.Go(func() { sendFlood(ctx, socks, datagram) })
	return func() {
		cancel()
		for _, c := range socks {
			c.Close()
		}
		wg.Wait()
	}, nil
}

// sendFlood sends datagram on socks in turn at FloodRate, FloodMax at most.
func sendFlood(ctx context.Context, socks []*net.UDPConn, datagram []byte) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	sent := 0
	for sent < FloodMax {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		due := min(int(time.Since(start).Seconds()*FloodRate), FloodMax)
		for ; sent < due; sent++ {
			_, _ = socks[sent%len(socks)].Write(datagram) // refusals (ICMP) are fine
		}
	}
}

// drainUDP reads what comes back to c until it is closed.
func drainUDP(c *net.UDPConn) {
	b := make([]byte, 2048)
	for {
		if _, err := c.Read(b); err != nil && !isRefused(err) {
			return
		}
	}
}

// isRefused reports a connected UDP socket's ICMP port-unreachable error,
// which the next read returns; the socket stays usable.
func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

package sctp_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/sctp"
	"github.com/braidhq/braid/transport/transporttest"
	"github.com/pion/logging"
	pion "github.com/pion/sctp"
)

func newTransport(testing.TB) transport.Transport { return sctp.New(sctp.Config{}) }

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T) transport.Transport { return newTransport(t) },
		"127.0.0.1:0", transporttest.Options{Garbage: udpGarbage, Timeout: 60 * time.Second,
			Attacks: transporttest.Attacks{Silent: sctpSilent, Unauthenticated: sctpUnauthenticated, Flood: clientHelloFlood}})
}

// TestINITFloodAcrossBed is the WAN flood case (transporttest's
// DoS/WAN/Flood) against a plaintext listener (TLS off, so that it takes
// SCTP from another host), flooded with a replayed INIT.
func TestINITFloodAcrossBed(t *testing.T) {
	transporttest.AttackAcrossBed(t, sctp.New(sctp.Config{TLS: transport.TLSOff}), initFlood, transporttest.FloodSources, "Flood")
}

// clientHelloFlood replays the first datagram of a DTLS dial, a ClientHello,
// as transporttest.UDPFlood.
func clientHelloFlood(ctx context.Context, addr string, n int) (func(), error) {
	return replayFlood(ctx, sctp.New(sctp.Config{TLS: transport.TLSOn}), addr, n)
}

// initFlood replays the first datagram of a plaintext dial, an INIT.
func initFlood(ctx context.Context, addr string, n int) (func(), error) {
	return replayFlood(ctx, sctp.New(sctp.Config{TLS: transport.TLSOff}), addr, n)
}

// replayFlood captures the first datagram tr's dialer sends and floods addr
// with it.
func replayFlood(ctx context.Context, tr transport.Transport, addr string, n int) (func(), error) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if a, err := tr.Dial(dctx, pc.LocalAddr().String(), transport.DialConfig{Secret: []byte("not the secret"), RecStreams: 1, MaxStreams: 1}); err == nil {
			a.Abort(nil)
		}
	}()
	defer func() { cancel(); <-done }()
	b := make([]byte, 2048)
	_ = pc.SetReadDeadline(time.Now().Add(5 * time.Second))
	m, _, err := pc.ReadFrom(b)
	if err != nil {
		return nil, fmt.Errorf("capturing a dialer's first datagram: %w", err)
	}
	return transporttest.UDPFlood(ctx, addr, n, b[:m])
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

// sctpSilent starts n peers that finish SCTP's four-way handshake (so the
// listener holds an association for each) and send nothing more; the
// listener may drop them.
func sctpSilent(ctx context.Context, addr string, n int) (func(), error) {
	return sctpPeers(ctx, addr, n, nil)
}

// sctpUnauthenticated starts n peers that associate, send a well-formed
// hello on the control stream (and never answer the challenge), then write
// 64 KiB on each of 4 data streams: pion would hold all of it in its
// receive window.
func sctpUnauthenticated(ctx context.Context, addr string, n int) (func(), error) {
	junk := make([]byte, 64<<10)
	return sctpPeers(ctx, addr, n, func(pa *pion.Association) {
		ctl, err := pa.OpenStream(0, pion.PayloadTypeWebRTCBinary)
		if err != nil {
			return
		}
		_, _ = ctl.WriteSCTP(transporttest.Hello()[2:], pion.PayloadTypeWebRTCBinary) // a message: no length prefix
		for s := range 4 {
			if st, err := pa.OpenStream(uint16(s+1), pion.PayloadTypeWebRTCBinary); err == nil {
				_, _ = st.WriteSCTP(junk, pion.PayloadTypeWebRTCBinary)
			}
		}
	})
}

// sctpPeers associates n raw pion peers with the listener at addr, 16 at a
// time, and runs act on each; stop aborts them. Peers the listener drops
// to make room are fine.
func sctpPeers(ctx context.Context, addr string, n int, act func(*pion.Association)) (func(), error) {
	type peer struct {
		pa *pion.Association
		uc net.Conn
	}
	var mu sync.Mutex
	var peers []peer
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		var wg sync.WaitGroup
		for _, p := range peers {
			wg.Go(func() {
				_ = p.uc.Close() // first, so that nothing waits to be sent
				p.pa.Abort("attack over")
			})
		}
		wg.Wait()
		peers = nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			uc, err := net.Dial("udp", addr)
			if err != nil {
				errs <- err
				return
			}
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			pa, err := pion.ClientContext(hctx, pion.WithNetConn(uc), pion.WithLoggerFactory(logging.NewDefaultLoggerFactory()))
			if err != nil {
				_ = uc.Close()
				return
			}
			mu.Lock()
			peers = append(peers, peer{pa, uc})
			mu.Unlock()
			if act != nil {
				act(pa)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// Package relay is a fault-injection instrument: a relay on one loopback
// port that forwards TCP connections and UDP flows to a target address and
// can black-hole all of them on demand, the way a cut cable or a dropping
// firewall would. Tests put it between two ends of a connection (a braid
// server and a worker, the two ends of an association) to check that each
// end notices a silent peer.
//
// # Fidelity and range
//
// TCP: each accepted connection gets its own connection to the target and
// one copier per direction with a 64 KiB buffer. While blocked, the copiers
// neither read nor write: bytes stay in the kernel's socket buffers (so the
// senders' writes block once those are full, as on a black-holed path),
// nothing is closed, and everything resumes in order when unblocked. A
// close (FIN) or reset on one side is passed on when the gate is open.
// Unlike a real black hole, the kernel still acknowledges each side's
// segments, so TCP's own retransmission timeouts never fire: the relay
// tests what an application notices, not what TCP notices.
//
// UDP: each client source address is a flow with its own socket towards the
// target, so the target sees one address per client, and replies go back
// to the client from the relay's port. While blocked, datagrams both ways
// are dropped. Flows unused for FlowIdle end; at most MaxFlows exist at
// once (datagrams from further clients are dropped). Sockets ask the
// kernel for 4 MiB buffers (it may cap them at net.core.rmem_max), and one
// goroutine per direction moves a datagram with two system calls, so a
// sender on loopback loses no more than it would without the relay:
// BenchmarkUDP echoes 8 KiB datagrams through it at about 5 Gbit/s on a
// 2-core machine.
//
// Every goroutine belongs to the Relay and Close waits for all of them.
package relay

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

const (
	// MaxFlows bounds the UDP flows (client addresses) at once.
	MaxFlows = 1024
	// bufSize is every copier's buffer: a TCP chunk, or the largest UDP
	// datagram.
	bufSize = 64 << 10
	// sockBuf is the kernel buffer size the relay asks for on UDP sockets.
	sockBuf = 4 << 20
	// bindAttempts bounds the tries to find a port free for both TCP and
	// UDP.
	bindAttempts = 20
)

// Relay forwards TCP and UDP from one loopback port to a target. Its
// methods are safe for concurrent use.
type Relay struct {
	target string
	tln    *net.TCPListener
	uc     *net.UDPConn
	gate   gate
	maxUDP atomic.Int64 // datagrams above this size are dropped (0: none)
	tap    atomic.Pointer[func([]byte)]
	closed chan struct{}   // closed by Close
	ctx    context.Context // cancelled by Close, for dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the relay

	mu    sync.Mutex // guards flows, pipes, done
	flows map[netip.AddrPort]*flow
	pipes map[*pipe]struct{}
	done  bool // Close has begun: no new flows or pipes
}

// New starts a relay on 127.0.0.1 that forwards TCP and UDP arriving on
// one port to target ("host:port"). The target need not be listening yet;
// a TCP connection that cannot reach it is closed.
func New(target string) (*Relay, error) {
	tln, uc, err := bindBoth()
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	r := &Relay{target: target, tln: tln, uc: uc, closed: make(chan struct{}),
		flows: map[netip.AddrPort]*flow{}, pipes: map[*pipe]struct{}{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.gate.init()
	_ = uc.SetReadBuffer(sockBuf)
	_ = uc.SetWriteBuffer(sockBuf)
	r.wg.Go(r.acceptLoop)
	r.wg.Go(r.udpLoop)
	return r, nil
}

// bindBoth binds TCP on a free loopback port, then UDP on the same port
// number, retrying with another port when that UDP port is taken.
func bindBoth() (*net.TCPListener, *net.UDPConn, error) {
	var lastErr error
	for range bindAttempts {
		tln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, nil, err
		}
		port := tln.Addr().(*net.TCPAddr).Port
		uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err == nil {
			return tln, uc, nil
		}
		tln.Close()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("no port free for both TCP and UDP after %d tries: %w", bindAttempts, lastErr)
}

// Addr is the relay's address, "127.0.0.1:port", for TCP and UDP alike.
func (r *Relay) Addr() string { return r.tln.Addr().String() }

// Block black-holes all traffic both ways while on is true (see the package
// comment), and lets it flow again when it is false.
func (r *Relay) Block(on bool) { r.gate.set(on) }

// DropUDPAbove drops, both ways, every UDP datagram of more than n bytes
// (as a path with a small MTU that does not pass IP fragments would);
// n <= 0 forwards all again.
func (r *Relay) DropUDPAbove(n int) { r.maxUDP.Store(int64(max(n, 0))) }

// Tap calls fn with every chunk of bytes (TCP) and every datagram (UDP)
// the relay forwards, either way, as an eavesdropper on the path would see
// them; fn must not keep the slice. nil stops it.
func (r *Relay) Tap(fn func(p []byte)) {
	if fn == nil {
		r.tap.Store(nil)
		return
	}
	r.tap.Store(&fn)
}

// saw shows p to the tap, if there is one.
func (r *Relay) saw(p []byte) {
	if fn := r.tap.Load(); fn != nil {
		(*fn)(p)
	}
}

// passes reports whether a datagram of n bytes may be forwarded.
func (r *Relay) passes(n int) bool {
	limit := r.maxUDP.Load()
	return !r.gate.blocked.Load() && (limit == 0 || int64(n) <= limit)
}

// Close stops the relay: it closes its sockets and every forwarded
// connection and flow, and waits for its goroutines to exit.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.done {
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	}
	r.done = true
	close(r.closed)
	r.cancel()
	for p := range r.pipes {
		p.close()
	}
	for _, f := range r.flows {
		f.up.Close()
	}
	r.mu.Unlock()
	r.tln.Close()
	r.uc.Close()
	r.wg.Wait()
	return nil
}

package sctp_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/transport/internal/clustertls"
	"github.com/braidhq/braid/transport/sctp"
	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/protocol/handshake"
)

// dtlsIntercept is the Confidentiality/Relay man in the middle for sctp
// over DTLS (transporttest.Interceptor). Each UDP flow from a dialer gets a
// DTLS server handshake presenting the certificate clustertls makes from
// secret and taking any client certificate or none, and at once a UDP
// flow to the listener with a DTLS client handshake presenting it too and
// taking any server certificate. Then it relays record by record (one SCTP
// packet each), showing each decrypted packet to see. Both sides speak
// the listener's cookie exchange (dtls_cookie.go) as braid's peers do: it
// answers a dialer's ClientHello without a cookie with a
// HelloVerifyRequest, and asks the listener for a cookie before its own
// handshake.
func dtlsIntercept(t testing.TB, listenAddr string, secret []byte, see func(p []byte)) string {
	t.Helper()
	cfgs, err := clustertls.For(secret)
	if err != nil {
		t.Fatal(err)
	}
	target, err := net.ResolveUDPAddr("udp", listenAddr)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	m := &dtlsMITM{target: target, see: see, cert: cfgs.Cert, pc: pc, flows: map[string]*mitmFlow{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.track(pc)
	m.wg.Go(m.demux)
	t.Cleanup(m.close)
	return pc.LocalAddr().String()
}

// demux reads the interceptor's socket: a ClientHello from a new flow
// without a cookie gets a HelloVerifyRequest, one with a cookie starts a
// session, and what else a flow sends goes to its session.
func (m *dtlsMITM) demux() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := m.pc.ReadFromUDP(buf)
		if err != nil {
			return
		}
		p := append([]byte(nil), buf[:n]...)
		m.mu.Lock()
		f := m.flows[from.String()]
		m.mu.Unlock()
		if f != nil {
			f.deliver(p)
			continue
		}
		cookie, hello := sctp.ClientHelloCookie(p)
		switch {
		case !hello:
		case len(cookie) == 0:
			_, _ = m.pc.WriteToUDP(sctp.HelloVerifyFor(p, []byte("mitm cookie")), from)
		default:
			f := &mitmFlow{pc: m.pc, peer: from, in: make(chan []byte, 256), done: make(chan struct{})}
			m.mu.Lock()
			m.flows[from.String()] = f
			m.mu.Unlock()
			m.track(f)
			f.deliver(p)
			down, err := dtls.ServerWithOptions(f, from, dtls.WithCertificates(m.cert), dtls.WithClientAuth(dtls.RequestClientCert),
				dtls.WithInsecureSkipVerifyHello(true))
			if err != nil {
				continue
			}
			m.wg.Go(func() { m.session(down) })
		}
	}
}

// mitmFlow is one dialer flow of the interceptor's socket, as the
// net.PacketConn its DTLS server runs on.
type mitmFlow struct {
	pc        *net.UDPConn
	peer      *net.UDPAddr
	in        chan []byte
	done      chan struct{}
	closeOnce sync.Once
	deadline  atomic.Pointer[time.Time]
}

func (f *mitmFlow) deliver(p []byte) {
	select {
	case f.in <- p:
	default:
	}
}

func (f *mitmFlow) ReadFrom(b []byte) (int, net.Addr, error) {
	var expire <-chan time.Time
	if d := f.deadline.Load(); d != nil && !d.IsZero() {
		tm := time.NewTimer(time.Until(*d))
		defer tm.Stop()
		expire = tm.C
	}
	select {
	case p := <-f.in:
		return copy(b, p), f.peer, nil
	case <-f.done:
		return 0, nil, net.ErrClosed
	case <-expire:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

func (f *mitmFlow) WriteTo(b []byte, _ net.Addr) (int, error) { return f.pc.WriteToUDP(b, f.peer) }
func (f *mitmFlow) Close() error {
	f.closeOnce.Do(func() { close(f.done) })
	return nil
}
func (f *mitmFlow) LocalAddr() net.Addr                { return f.pc.LocalAddr() }
func (f *mitmFlow) SetDeadline(t time.Time) error      { return f.SetReadDeadline(t) }
func (f *mitmFlow) SetReadDeadline(t time.Time) error  { f.deadline.Store(&t); return nil }
func (f *mitmFlow) SetWriteDeadline(t time.Time) error { return nil }

// dtlsMITM is dtlsIntercept's relay; close ends its goroutines.
type dtlsMITM struct {
	pc     *net.UDPConn // the dialers' side
	target *net.UDPAddr
	see    func([]byte)
	cert   tls.Certificate
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards conns, closed and flows
	conns  []io.Closer
	closed bool
	flows  map[string]*mitmFlow
}

// track registers c to be closed by close; after close, c is closed at once.
func (m *dtlsMITM) track(c io.Closer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		c.Close()
		return
	}
	m.conns = append(m.conns, c)
}

func (m *dtlsMITM) close() {
	m.cancel()
	m.mu.Lock()
	m.closed = true
	for _, c := range m.conns {
		c.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// session runs both handshakes of one dialer flow, then relays.
func (m *dtlsMITM) session(down *dtls.Conn) {
	m.track(down)
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	var up *dtls.Conn
	var upErr error
	var hs sync.WaitGroup
	hs.Go(func() {
		up, upErr = m.dial(ctx)
	})
	downErr := down.HandshakeContext(ctx)
	hs.Wait()
	switch {
	case downErr == nil && upErr == nil:
		m.splice(down, up)
	case downErr == nil:
		m.drain(down)
	case upErr == nil:
		m.drain(up)
	}
	down.Close()
	if up != nil {
		up.Close()
	}
}

// dial opens a flow to the listener, asks it for a cookie as braid's
// dialer does, and runs the client handshake with the cookie in its first
// ClientHello.
func (m *dtlsMITM) dial(ctx context.Context) (*dtls.Conn, error) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	m.track(pc)
	cookie, err := askCookie(ctx, pc, m.target)
	if err != nil {
		return nil, err
	}
	withCookie := func(ch handshake.MessageClientHello) handshake.Message {
		ch.Cookie = cookie
		return &ch
	}
	c, err := dtls.ClientWithOptions(pc, m.target, dtls.WithCertificates(m.cert), dtls.WithInsecureSkipVerify(true),
		dtls.WithClientHelloMessageHook(withCookie))
	if err != nil {
		return nil, err
	}
	m.track(c)
	if err := c.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// askCookie sends a probe ClientHello to target until a HelloVerifyRequest
// comes back, and returns its cookie.
func askCookie(ctx context.Context, pc *net.UDPConn, target *net.UDPAddr) ([]byte, error) {
	buf := make([]byte, 2048)
	for ctx.Err() == nil {
		if _, err := pc.WriteToUDP(sctp.ProbeHello(), target); err != nil {
			return nil, err
		}
		_ = pc.SetReadDeadline(time.Now().Add(time.Second))
		for {
			n, _, err := pc.ReadFromUDP(buf)
			if err != nil {
				break
			}
			if cookie, ok := sctp.HelloVerifyCookie(buf[:n]); ok {
				_ = pc.SetReadDeadline(time.Time{})
				return cookie, nil
			}
		}
	}
	return nil, ctx.Err()
}

// splice relays records both ways until either conn ends.
func (m *dtlsMITM) splice(a, b *dtls.Conn) {
	var both sync.WaitGroup
	for _, p := range [][2]*dtls.Conn{{a, b}, {b, a}} {
		both.Go(func() {
			buf := make([]byte, 64<<10)
			for {
				n, err := p[0].Read(buf)
				if err != nil {
					break
				}
				m.see(buf[:n])
				if _, err := p[1].Write(buf[:n]); err != nil {
					break
				}
			}
			a.Close()
			b.Close()
		})
	}
	both.Wait()
}

// drain reads c until its peer ends it, showing what it reads.
func (m *dtlsMITM) drain(c *dtls.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		m.see(buf[:n])
	}
}

package sctp_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport/internal/clustertls"
	"github.com/pion/dtls/v3"
)

// dtlsIntercept is the Confidentiality/Relay man in the middle for sctp
// over DTLS (transporttest.Interceptor). Each UDP flow from a dialer gets a
// DTLS server handshake presenting the certificate clustertls makes from
// secret and taking any client certificate or none, and at once a UDP
// flow to the listener with a DTLS client handshake presenting it too and
// taking any server certificate. Then it relays record by record (one SCTP
// packet each), showing each decrypted packet to see.
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
	ln, err := dtls.ListenWithOptions("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)},
		dtls.WithCertificates(cfgs.Cert), dtls.WithClientAuth(dtls.RequestClientCert))
	if err != nil {
		t.Fatal(err)
	}
	m := &dtlsMITM{target: target, see: see, cert: cfgs.Cert}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.wg.Go(func() { m.session(c.(*dtls.Conn)) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		m.close()
	})
	return ln.Addr().String()
}

// dtlsMITM is dtlsIntercept's relay; close ends its goroutines.
type dtlsMITM struct {
	target *net.UDPAddr
	see    func([]byte)
	cert   tls.Certificate
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards conns and closed
	conns  []io.Closer
	closed bool
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

// dial opens a flow to the listener and runs the client handshake.
func (m *dtlsMITM) dial(ctx context.Context) (*dtls.Conn, error) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	m.track(pc)
	c, err := dtls.ClientWithOptions(pc, m.target, dtls.WithCertificates(m.cert), dtls.WithInsecureSkipVerify(true))
	if err != nil {
		return nil, err
	}
	m.track(c)
	if err := c.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return c, nil
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

package transporttest

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/braidhq/braid/transport/internal/clustertls"
)

// TLSIntercept is the Interceptor for the transports whose channels are
// TCP connections carrying TLS keyed to the cluster secret (tcp, tcpn and
// ptcp with TLS on). Each connection it accepts gets a TLS server
// handshake towards the dialer and, at once, a TCP connection and a TLS
// client handshake towards the listener, both presenting the certificate
// clustertls makes from secret.
func TLSIntercept(t testing.TB, listenAddr string, secret []byte, see func(p []byte)) string {
	t.Helper()
	cfgs, err := clustertls.For(secret)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &tlsMITM{
		target: listenAddr, see: see,
		server: &tls.Config{Certificates: []tls.Certificate{cfgs.Cert}, ClientAuth: tls.RequestClientCert},
		client: &tls.Config{Certificates: []tls.Certificate{cfgs.Cert}, InsecureSkipVerify: true}, // it trusts anyone
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			m.wg.Go(func() { m.session(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		m.close()
	})
	return ln.Addr().String()
}

// tlsMITM is TLSIntercept's relay. Every goroutine is in wg; close ends
// them.
type tlsMITM struct {
	target         string
	see            func([]byte)
	server, client *tls.Config
	ctx            context.Context
	cancel         context.CancelFunc
	wg             sync.WaitGroup

	mu     sync.Mutex // guards conns and closed
	conns  []net.Conn
	closed bool
}

// track registers c to be closed by close; a conn arriving after close is
// closed at once.
func (m *tlsMITM) track(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		c.Close()
		return
	}
	m.conns = append(m.conns, c)
}

func (m *tlsMITM) close() {
	m.cancel()
	m.mu.Lock()
	m.closed = true
	for _, c := range m.conns {
		c.Close()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// session runs both handshakes of one dialer connection, then relays.
func (m *tlsMITM) session(raw net.Conn) {
	m.track(raw)
	ctx, cancel := context.WithTimeout(m.ctx, relayHandshakeTimeout)
	defer cancel()
	down := tls.Server(raw, m.server)
	var up *tls.Conn
	var upErr error
	var hs sync.WaitGroup
	hs.Go(func() {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", m.target)
		if err != nil {
			upErr = err
			return
		}
		m.track(c)
		up = tls.Client(c, m.client)
		upErr = up.HandshakeContext(ctx)
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

// splice relays a and b both ways until either ends.
func (m *tlsMITM) splice(a, b net.Conn) {
	var both sync.WaitGroup
	for _, p := range [][2]net.Conn{{a, b}, {b, a}} {
		both.Go(func() {
			_, _ = io.Copy(p[1], io.TeeReader(p[0], seeWriter(m.see)))
			a.Close()
			b.Close()
		})
	}
	both.Wait()
}

// drain reads c until its peer ends it, showing what it reads.
func (m *tlsMITM) drain(c net.Conn) { _, _ = io.Copy(seeWriter(m.see), c) }

// seeWriter shows what is written to it.
type seeWriter func([]byte)

func (w seeWriter) Write(p []byte) (int, error) {
	w(p)
	return len(p), nil
}

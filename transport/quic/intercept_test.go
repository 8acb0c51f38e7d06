package quic_test

import (
	"context"
	"crypto/tls"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport/internal/clustertls"
	quicgo "github.com/quic-go/quic-go"
)

// quicIntercept is the Confidentiality/Relay man in the middle for QUIC
// (transporttest.Interceptor). It listens for the dialer presenting the
// certificate clustertls makes from secret and taking any client
// certificate or none; as soon as a dialer's handshake starts, it dials the
// listener presenting that certificate too and taking any server
// certificate. Once both handshakes are through, it opens a stream to the
// listener for each one the dialer opens, in order, and relays them both
// ways, showing what it reads to see. braid's listener opens no streams,
// so none are relayed the other way.
func quicIntercept(t testing.TB, listenAddr string, secret []byte, see func(p []byte)) string {
	t.Helper()
	cfgs, err := clustertls.For(secret)
	if err != nil {
		t.Fatal(err)
	}
	server := &tls.Config{Certificates: []tls.Certificate{cfgs.Cert}, ClientAuth: tls.RequestClientCert,
		NextProtos: []string{"braid/1"}, MinVersion: tls.VersionTLS13}
	ql, err := quicgo.ListenAddrEarly("127.0.0.1:0", server, &quicgo.Config{MaxIdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m := &quicMITM{target: listenAddr, see: see, client: &tls.Config{Certificates: []tls.Certificate{cfgs.Cert},
		InsecureSkipVerify: true, NextProtos: []string{"braid/1"}, MinVersion: tls.VersionTLS13}} // it trusts anyone
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Go(func() {
		for {
			qc, err := ql.Accept(m.ctx)
			if err != nil {
				return
			}
			m.wg.Go(func() { m.session(qc) })
		}
	})
	t.Cleanup(func() {
		m.cancel()
		ql.Close()
		m.wg.Wait()
	})
	return ql.Addr().String()
}

// quicMITM is quicIntercept's relay; its goroutines are in wg and end once
// ctx is cancelled.
type quicMITM struct {
	target string
	see    func([]byte)
	client *tls.Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// session handshakes with the listener while the dialer's handshake
// completes, then relays.
func (m *quicMITM) session(down *quicgo.Conn) {
	ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
	defer cancel()
	var up *quicgo.Conn
	var upErr error
	var hs sync.WaitGroup
	hs.Go(func() {
		up, upErr = quicgo.DialAddr(ctx, m.target, m.client, &quicgo.Config{MaxIdleTimeout: time.Minute})
	})
	var downErr error
	select {
	case <-down.HandshakeComplete():
		downErr = down.Context().Err()
	case <-down.Context().Done():
		downErr = context.Cause(down.Context())
	case <-ctx.Done():
		downErr = ctx.Err()
	}
	hs.Wait()
	switch {
	case downErr == nil && upErr == nil:
		m.splice(down, up)
	case downErr == nil:
		m.hold(down)
	case upErr == nil:
		m.hold(up)
	}
	_ = down.CloseWithError(0, "")
	if up != nil {
		_ = up.CloseWithError(0, "")
	}
}

// hold keeps a connection whose other half failed until its peer ends it.
func (m *quicMITM) hold(qc *quicgo.Conn) {
	select {
	case <-qc.Context().Done():
	case <-m.ctx.Done():
	}
}

// splice relays the dialer's streams until either connection ends.
func (m *quicMITM) splice(down, up *quicgo.Conn) {
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	context.AfterFunc(up.Context(), cancel)
	var streams sync.WaitGroup
	defer func() {
		_ = down.CloseWithError(0, "")
		_ = up.CloseWithError(0, "")
		streams.Wait()
	}()
	for {
		ds, err := down.AcceptStream(ctx)
		if err != nil {
			return
		}
		us, err := up.OpenStreamSync(ctx)
		if err != nil {
			return
		}
		for _, p := range [][2]*quicgo.Stream{{ds, us}, {us, ds}} {
			streams.Go(func() {
				_, err := io.Copy(p[1], io.TeeReader(p[0], seeWriter(m.see)))
				if err == nil {
					_ = p[1].Close()
					return
				}
				cancel()
				_ = down.CloseWithError(0, "")
				_ = up.CloseWithError(0, "")
			})
		}
	}
}

// seeWriter shows what is written to it.
type seeWriter func([]byte)

func (w seeWriter) Write(p []byte) (int, error) {
	w(p)
	return len(p), nil
}

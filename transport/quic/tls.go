package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/clustertls"
	quicgo "github.com/quic-go/quic-go"
)

// serverTLS is a listener's TLS configuration for the cluster secret: it
// presents Config.Certificate or, by default, the cluster's certificate
// (clustertls), and requires of every dialer a certificate that chains to
// the cluster's authority.
func (t *Transport) serverTLS(secret []byte) (*tls.Config, error) {
	cfgs, err := clustertls.For(secret)
	if err != nil {
		return nil, err
	}
	c := cfgs.Server.Clone()
	c.NextProtos = []string{alpn}
	if t.cfg.Certificate != nil {
		c.Certificates = []tls.Certificate{*t.cfg.Certificate}
	}
	return c, nil
}

// clientTLS is a dialer's TLS configuration for the cluster secret: it
// presents the cluster's certificate and accepts a listener whose
// certificate chains to the cluster's authority or, with Config.RootCAs,
// to those authorities under Config.ServerName (default the dial
// address's host).
func (t *Transport) clientTLS(addr string, secret []byte) (*tls.Config, error) {
	cfgs, err := clustertls.For(secret)
	if err != nil {
		return nil, err
	}
	c := cfgs.Client.Clone()
	c.NextProtos = []string{alpn}
	if t.cfg.RootCAs != nil {
		c.RootCAs, c.ServerName = t.cfg.RootCAs, t.cfg.ServerName
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(addr)
		}
	}
	return c, nil
}

// handshakeTLS waits for the TLS handshake of a connection from an early
// listener, which hands it over before the dialer has shown its
// certificate.
func handshakeTLS(ctx context.Context, qc *quicgo.Conn) error {
	select {
	case <-qc.HandshakeComplete(): // closed only on success
		return nil
	case <-qc.Context().Done():
		return authErr(peerErr(context.Cause(qc.Context())))
	case <-ctx.Done():
		return ctx.Err()
	}
}

// authErr marks a TLS failure that says the peers do not share the
// cluster's authority (a certificate that does not chain to it, or ours
// refused by the peer: a different secret, or a stranger) as
// transport.ErrAuth. quic-go reports either as a crypto error carrying the
// TLS alert.
func authErr(err error) error {
	var te *quicgo.TransportError
	if errors.As(err, &te) && certAlert(te.ErrorCode) {
		return fmt.Errorf("%w: TLS: %v (a different cluster secret?)", transport.ErrAuth, te)
	}
	return err
}

// certAlert reports whether code carries a TLS alert about a certificate
// or its proof of possession (RFC 8446 §6.2).
func certAlert(code quicgo.TransportErrorCode) bool {
	if !code.IsCryptoError() {
		return false
	}
	switch code - 0x100 {
	case 42, 43, 44, 45, 46, // bad, unsupported, revoked, expired, unknown certificate
		48, 49, 51, // unknown CA, access denied, decrypt error (a bad CertificateVerify)
		116: // certificate required
		return true
	}
	return false
}

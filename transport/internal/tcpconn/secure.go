package tcpconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/clustertls"
	"github.com/braidhq/braid/transport/internal/preauth"
)

// Conn is a connection an association runs on: a *net.TCPConn, or TLS
// over one.
type Conn interface {
	net.Conn
	CloseWrite() error
}

// Options are how a transport's connections are made: protected by TLS
// keyed to the cluster secret (clustertls) as Mode says, over Multipath
// TCP if MPTCP is set, under congestion control CC.
type Options struct {
	Secret []byte
	Mode   transport.TLSMode
	// MPTCP asks the kernel for Multipath TCP (Linux): a connection whose
	// peer (or kernel) does not take it falls back to plain TCP, which
	// Multipath reports.
	MPTCP bool
	// CC, if set, is the TCP congestion control of every connection
	// (TCP_CONGESTION, Linux): "reno", "cubic", "bbr" or any other the
	// kernel has (root) or allows (net.ipv4.tcp_allowed_congestion_control).
	// Empty: the host's default (net.ipv4.tcp_congestion_control).
	CC string
}

// Dial opens a connection to addr, over TLS if sec says so for the peer.
// A connection the listener drops before its TLS handshake ends (a reset,
// or an end of stream) is dialed again, up to droppedRetries times: a
// listener whose pre-authentication slots a flood from the dialer's own
// address churns may evict it before its first bytes arrive
// (preauth.Gate), and nothing of braid's has been sent on it yet.
func Dial(ctx context.Context, addr string, sec Options) (Conn, error) {
	for try := 0; ; try++ {
		c, err := dialOnce(ctx, addr, sec)
		if err == nil || try == droppedRetries || ctx.Err() != nil || !dropped(err) {
			return c, err
		}
	}
}

// droppedRetries is how often Dial dials again a connection dropped
// during its TLS handshake.
const droppedRetries = 2

// dropped reports a TLS handshake that ended because the listener closed
// the connection, not because either end refused the other.
func dropped(err error) bool {
	return !errors.Is(err, transport.ErrAuth) &&
		(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}

// dialOnce is one try of Dial.
func dialOnce(ctx context.Context, addr string, sec Options) (Conn, error) {
	c, err := DialConn(ctx, addr, sec)
	if err != nil {
		return nil, err
	}
	if !sec.Mode.Dial(c.RemoteAddr()) {
		return c, nil
	}
	cfgs, err := clustertls.For(sec.Secret)
	if err != nil {
		c.Close()
		return nil, err
	}
	tc := tls.Client(c, cfgs.Client)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, tlsError(err)
	}
	return tc, nil
}

// accept looks at the first byte of an accepted connection and, if it
// starts a TLS handshake, completes it as the server; plaintext is taken
// only where sec allows it for the peer. ctx bounds the wait. The slot
// learns when the first byte came (Spoke) and when a TLS peer's
// certificate proved the secret (Proved).
func accept(ctx context.Context, c *net.TCPConn, sec Options, slot *preauth.Slot) (Conn, error) {
	stop := InterruptOn(ctx, c)
	first, rest, err := peekByte(c)
	if err = Settle(ctx, c, stop, err); err != nil {
		return nil, err
	}
	slot.Spoke()
	if !clustertls.IsHandshake(first) {
		if !sec.Mode.AcceptPlain(c.RemoteAddr()) {
			c.Close()
			return nil, fmt.Errorf("%w: plaintext from %s while data-plane TLS is %s (give the peer's braid a matching --data-plane-tls, or a newer braid)",
				transport.ErrAuth, c.RemoteAddr(), sec.Mode)
		}
		return rest, nil
	}
	cfgs, err := clustertls.For(sec.Secret)
	if err != nil {
		c.Close()
		return nil, err
	}
	tc := tls.Server(rest, cfgs.Server)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, tlsError(err)
	}
	slot.Proved() // the client's certificate chains to the cluster's authority
	return tc, nil
}

// tlsError marks a peer whose certificate does not chain to the cluster's
// authority (another secret) as an authentication failure.
func tlsError(err error) error {
	var ua x509.UnknownAuthorityError
	var cv *tls.CertificateVerificationError
	var alert tls.AlertError
	var op *net.OpError // an alert the peer sent: it refused our certificate
	if errors.As(err, &ua) || errors.As(err, &cv) || errors.As(err, &alert) || errors.As(err, &op) && op.Op == "remote error" {
		return fmt.Errorf("%w: TLS: %v (a different cluster secret?)", transport.ErrAuth, err)
	}
	return fmt.Errorf("TLS: %w", err)
}

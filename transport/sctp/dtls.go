package sctp

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/alive"
	"github.com/braidhq/braid/transport/internal/clustertls"
	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/protocol/handshake"
)

// Encryption (Config.TLS): SCTP over DTLS over UDP, the WebRTC data
// channel's stack. DTLS 1.2 (pion/dtls) runs on the association's UDP
// conn, and pion/sctp on the DTLS conn, so every SCTP packet travels as
// one DTLS record. Both ends present the certificate clustertls makes from
// the cluster secret and accept only one that chains to the cluster's
// authority: a peer without the secret can neither complete the handshake
// nor read or forge a packet.
//
// A listener tells the two apart by an association's first datagram: a
// DTLS ClientHello or an SCTP INIT (isClientHello, isInit). It takes DTLS
// from anyone and plaintext only where Config.TLS allows it for the peer
// (transport.TLSMode.AcceptPlain: from loopback, under the default). The
// listener answers a ClientHello with a stateless cookie first
// (HelloVerifyRequest) and starts a DTLS server only for a ClientHello
// that echoes it (cookie.go, dtls_cookie.go), as it answers an INIT and
// creates the association only for a COOKIE-ECHO in plaintext SCTP.
//
// pion/dtls reads datagrams of at most 8 KiB, and a record's plaintext may
// not exceed 16 KiB, so an encrypted association's packets are at most
// dtlsMaxPacket and its path MTU is not probed.
//
// pion/dtls writes each record to the conn under it as it seals it.
// sealedConn takes pion/sctp's WriteOwned and Flush so that the records of
// one round of its writeLoop are held by that conn and leave in one batch,
// as plaintext packets do (roundConn), and recordConn lets pion/transport
// skip arming a context for every record written. With pion/transport
// 5.1.5, whose reads no longer start a goroutine each, they took a fifth
// off the CPU per byte of DTLS at Ethernet-sized packets
// (BenchmarkCPUDTLS). pion/dtls's Write still starts one per record.

const (
	// dtlsOverhead is the most a record adds to an SCTP packet: its header
	// (13 bytes), AES-GCM's explicit nonce (8) and tag (16), with room.
	dtlsOverhead = 48
	// dtlsMaxPacket is the largest SCTP packet sent in one record: what
	// fits pion/dtls's 8 KiB read buffer.
	dtlsMaxPacket = 8192 - dtlsOverhead
	// Record and handshake header fields (RFC 6347 §4.1, §4.2.2).
	dtlsHandshake   = 22
	dtlsRecordLen   = 13
	dtlsClientHello = 1
	dtlsServerHello = 2
)

// isClientHello reports whether datagram b starts with a DTLS handshake
// record of epoch 0 carrying a ClientHello. An SCTP packet never passes:
// its 14th byte is the first chunk's flags, 0 in an INIT, where a DTLS
// record has the handshake type.
func isClientHello(b []byte) bool {
	return isHandshakeRecord(b) && b[dtlsRecordLen] == dtlsClientHello
}

// isServerHello reports whether datagram b starts with a ServerHello.
func isServerHello(b []byte) bool {
	return isHandshakeRecord(b) && b[dtlsRecordLen] == dtlsServerHello
}

func isHandshakeRecord(b []byte) bool {
	return len(b) > dtlsRecordLen+12 && b[0] == dtlsHandshake && b[1] == 0xfe && // DTLS 1.x
		b[3] == 0 && b[4] == 0 // epoch 0: the handshake's clear start
}

// dtlsOptions are the DTLS settings both ends share: the cluster's
// certificate, one AEAD suite, the extended master secret, and handshake
// flights cut to the association's first MTU.
func dtlsOptions(cfgs *clustertls.Configs, mtu int) []dtls.Option {
	return []dtls.Option{
		dtls.WithCertificates(cfgs.Cert),
		dtls.WithCipherSuites(dtls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
		dtls.WithExtendedMasterSecret(dtls.RequireExtendedMasterSecret),
		dtls.WithMTU(mtu),
	}
}

// dialDTLS runs the DTLS client handshake over a dialer's conn, with the
// listener's cookie in its first ClientHello (dtls_cookie.go).
func dialDTLS(ctx context.Context, c *dconn, secret []byte, mtu int) (*sealedConn, error) {
	cookie, err := fetchCookie(ctx, c)
	if err != nil {
		return nil, err
	}
	withCookie := func(ch handshake.MessageClientHello) handshake.Message {
		ch.Cookie = cookie
		return &ch
	}
	return handshakeDTLS(ctx, c, secret, func(cfgs *clustertls.Configs) (*dtls.Conn, error) {
		var opts []dtls.ClientOption
		for _, o := range dtlsOptions(cfgs, mtu) {
			opts = append(opts, o)
		}
		opts = append(opts, dtls.WithRootCAs(cfgs.Pool), dtls.WithServerName(clustertls.ServerName),
			dtls.WithClientHelloMessageHook(withCookie))
		return dtls.ClientWithOptions(recordConn{c}, c.RemoteAddr(), opts...)
	})
}

// acceptDTLS runs the DTLS server handshake over an accepted conn, whose
// first ClientHello carried a valid cookie (the listener checked it, so
// pion/dtls skips its own hello verification).
func acceptDTLS(ctx context.Context, c *pconn, secret []byte, mtu int) (*sealedConn, error) {
	return handshakeDTLS(ctx, c, secret, func(cfgs *clustertls.Configs) (*dtls.Conn, error) {
		var opts []dtls.ServerOption
		for _, o := range dtlsOptions(cfgs, mtu) {
			opts = append(opts, o)
		}
		opts = append(opts, dtls.WithClientCAs(cfgs.Pool), dtls.WithClientAuth(dtls.RequireAndVerifyClientCert),
			dtls.WithInsecureSkipVerifyHello(true))
		return dtls.ServerWithOptions(recordConn{c}, c.RemoteAddr(), opts...)
	})
}

// handshakeDTLS makes the DTLS conn over raw that open builds from the
// cluster's configuration, and runs its handshake.
func handshakeDTLS(ctx context.Context, raw roundConn, secret []byte, open func(*clustertls.Configs) (*dtls.Conn, error)) (*sealedConn, error) {
	cfgs, err := clustertls.For(secret)
	if err != nil {
		return nil, err
	}
	dc, err := open(cfgs)
	if err != nil {
		return nil, err
	}
	if err := dc.HandshakeContext(ctx); err != nil {
		_ = dc.Close()
		return nil, dtlsError(ctx, err)
	}
	return newSealedConn(dc, raw), nil
}

// dtlsError marks a peer whose certificate does not chain to the cluster's
// authority, or that refused ours, as an authentication failure.
func dtlsError(ctx context.Context, err error) error {
	// pion/dtls's alert error type is unexported: a fatal alert from the
	// peer (it refused our certificate) reads "alert: ...".
	var ua x509.UnknownAuthorityError
	if errors.As(err, &ua) || strings.Contains(err.Error(), "alert: ") {
		return fmt.Errorf("%w: DTLS: %v (a different cluster secret?)", transport.ErrAuth, err)
	}
	return ctxErr(ctx, fmt.Errorf("DTLS handshake: %w", err))
}

// roundConn is the conn under DTLS (pconn or dconn): its writes can be
// held for one batch, as pion's WriteOwned packets are, until Flush.
type roundConn interface {
	assocConn
	holdRound()
	Flush() error
}

var (
	_ roundConn = (*pconn)(nil)
	_ roundConn = (*dconn)(nil)
)

// recordConn is the net.PacketConn pion/dtls reads and writes its records
// on: a roundConn, whose peer is fixed.
type recordConn struct{ c roundConn }

func (r recordConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, err := r.c.Read(b)
	return n, r.c.RemoteAddr(), err
}

func (r recordConn) WriteTo(b []byte, _ net.Addr) (int, error) { return r.c.Write(b) }

// WriteToNonBlock is WriteTo for pion/transport's netctx, which then
// skips arming the write's context (a goroutine per record): a roundConn's
// Write only queues the record, waiting at most for its socket's queue to
// drain or close, and ignores write deadlines anyway.
func (r recordConn) WriteToNonBlock(b []byte, _ net.Addr) (int, bool, error) {
	n, err := r.c.Write(b)
	return n, true, err
}

func (r recordConn) Close() error                       { return r.c.Close() }
func (r recordConn) LocalAddr() net.Addr                { return r.c.LocalAddr() }
func (r recordConn) SetDeadline(t time.Time) error      { return r.c.SetDeadline(t) }
func (r recordConn) SetReadDeadline(t time.Time) error  { return r.c.SetReadDeadline(t) }
func (r recordConn) SetWriteDeadline(t time.Time) error { return r.c.SetWriteDeadline(t) }

// sealedConn is the conn pion/sctp runs on over DTLS: it checks each
// decrypted SCTP packet as pconn and dconn check plaintext ones, and keeps
// the association's signs of life, which only authenticated packets count
// for.
type sealedConn struct {
	*dtls.Conn
	raw  roundConn // the UDP conn under DTLS, closed with it
	hook garbageHook
	life alive.Clock
	rtt  rttClock
	rbuf []byte // ReadPacket's, for pion's one reader
}

var _ assocConn = (*sealedConn)(nil)

func newSealedConn(dc *dtls.Conn, raw roundConn) *sealedConn {
	c := &sealedConn{Conn: dc, raw: raw, rbuf: make([]byte, 8192)}
	c.hook.set(func(error) { _ = c.Close() })
	c.life.Start()
	return c
}

// setLinger passes the delay to the UDP conn under DTLS.
func (c *sealedConn) setLinger(d time.Duration) { c.raw.setLinger(d) }

func (c *sealedConn) handshakeRTT() time.Duration { return c.rtt.get() }
func (c *sealedConn) garbage() *garbageHook       { return &c.hook }
func (c *sealedConn) signs() *alive.Clock         { return &c.life }

// Read returns the next well-formed packet; a malformed one, which only a
// holder of the cluster secret can have sent, is reported to the hook.
func (c *sealedConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if err != nil {
			return n, err
		}
		if err := checkPacket(p[:n]); err != nil {
			c.hook.fire(err)
			continue
		}
		c.life.Heard()
		c.rtt.got(p[:n])
		return n, nil
	}
}

// ReadPacket is Read into a buffer of the packet's size, which the caller
// owns; pion's readLoop would otherwise read into a new 64 KiB one.
func (c *sealedConn) ReadPacket() ([]byte, error) {
	n, err := c.Read(c.rbuf)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), c.rbuf[:n]...), nil
}

// Write sends one SCTP packet as one DTLS record.
func (c *sealedConn) Write(p []byte) (int, error) {
	c.life.Sent()
	c.rtt.sent(p)
	return c.Conn.Write(p)
}

// WriteOwned seals p into a record that the conn under DTLS holds until
// Flush, so that the records of one round of pion's writeLoop leave in one
// batch (one sendmmsg), as plaintext packets do. pion calls it and Flush
// from its writeLoop only.
func (c *sealedConn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	c.raw.holdRound()
	n, err := c.Write(p)
	release(p)
	return n, err
}

// Flush sends the round's records (and any other record written since
// the round began: pion/dtls's own, from its goroutines, wait with them).
func (c *sealedConn) Flush() error { return c.raw.Flush() }

// Close sends DTLS's close_notify and closes the UDP conn.
func (c *sealedConn) Close() error {
	err := c.Conn.Close()
	_ = c.raw.Close()
	return err
}

func (c *sealedConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *sealedConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetWriteDeadline is a no-op, as on the plaintext conns: pion sets one
// for its own writes, and a DTLS conn whose write deadline passed stays
// unusable.
func (c *sealedConn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only (see SetWriteDeadline).
func (c *sealedConn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

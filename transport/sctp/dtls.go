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
// Once the handshake is done, the association's records are sealed and
// opened here (record.go), in pion/sctp's own goroutines, with the keys
// pion/dtls negotiated; pion/dtls keeps the rest of the protocol (a
// retransmitted flight, alerts) through recordMux. sealedConn takes
// pion/sctp's WriteOwned and Flush so that the records of one round of its
// writeLoop leave in one batch, as plaintext packets do (roundConn). When
// the negotiated state is not one record.go can key, pion/dtls seals and
// opens every record as before: then recordConn lets pion/transport skip
// arming a context for every record written, but pion/dtls's Write still
// starts a goroutine per record.

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
func dialDTLS(ctx context.Context, c *dconn, secret []byte, mtu int, fast bool, log logfFunc) (*sealedConn, error) {
	cookie, err := fetchCookie(ctx, c)
	if err != nil {
		return nil, err
	}
	withCookie := func(ch handshake.MessageClientHello) handshake.Message {
		ch.Cookie = cookie
		return &ch
	}
	m := newRecordMux(c)
	return handshakeDTLS(ctx, m, secret, fast, log, func(cfgs *clustertls.Configs) (*dtls.Conn, error) {
		var opts []dtls.ClientOption
		for _, o := range dtlsOptions(cfgs, mtu) {
			opts = append(opts, o)
		}
		opts = append(opts, dtls.WithRootCAs(cfgs.Pool), dtls.WithServerName(clustertls.ServerName),
			dtls.WithClientHelloMessageHook(withCookie))
		return dtls.ClientWithOptions(recordConn{m}, c.RemoteAddr(), opts...)
	})
}

// acceptDTLS runs the DTLS server handshake over an accepted conn, whose
// first ClientHello carried a valid cookie (the listener checked it, so
// pion/dtls skips its own hello verification).
func acceptDTLS(ctx context.Context, c *pconn, secret []byte, mtu int, fast bool, log logfFunc) (*sealedConn, error) {
	m := newRecordMux(c)
	return handshakeDTLS(ctx, m, secret, fast, log, func(cfgs *clustertls.Configs) (*dtls.Conn, error) {
		var opts []dtls.ServerOption
		for _, o := range dtlsOptions(cfgs, mtu) {
			opts = append(opts, o)
		}
		opts = append(opts, dtls.WithClientCAs(cfgs.Pool), dtls.WithClientAuth(dtls.RequireAndVerifyClientCert),
			dtls.WithInsecureSkipVerifyHello(true))
		return dtls.ServerWithOptions(recordConn{m}, c.RemoteAddr(), opts...)
	})
}

// handshakeDTLS makes the DTLS conn over m's conn that open builds from
// the cluster's configuration, and runs its handshake; with fast, the
// records are then sealed and opened here (record.go).
func handshakeDTLS(ctx context.Context, m *recordMux, secret []byte, fast bool, log logfFunc, open func(*clustertls.Configs) (*dtls.Conn, error)) (*sealedConn, error) {
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
	return newSealedConn(dc, m, fast, log), nil
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
// held for one batch, as pion's WriteOwned packets are, until Flush, and
// next returns its datagrams as received.
type roundConn interface {
	assocConn
	holdRound()
	WriteOwned(p []byte, release func([]byte)) (int, error)
	// writePooled is WriteOwned for *b, a buffer of getRecordBuf's: held
	// until Flush, then given back to its pool (putBuf).
	writePooled(b *[]byte) (int, error)
	Flush() error
	// next returns the next datagram; the caller releases its buffer
	// (pk.rb). One goroutine at a time may call it, and none may call
	// Read meanwhile.
	next() (packet, error)
	// ready reports whether next has a datagram at hand, read from the
	// socket already; if not, next may wait. Its caller's goroutine only.
	ready() bool
}

var (
	_ roundConn = (*pconn)(nil)
	_ roundConn = (*dconn)(nil)
)

// recordConn is the net.PacketConn pion/dtls reads and writes its records
// on: a roundConn, whose peer is fixed, shared with the fast path.
type recordConn struct{ m *recordMux }

func (r recordConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, err := r.m.readForDTLS(b)
	return n, r.m.raw.RemoteAddr(), err
}

func (r recordConn) WriteTo(b []byte, _ net.Addr) (int, error) { return r.m.raw.Write(b) }

// WriteToNonBlock is WriteTo for pion/transport's netctx, which then
// skips arming the write's context (a goroutine per record): a roundConn's
// Write only queues the record, waiting at most for its socket's queue to
// drain or close, and ignores write deadlines anyway.
func (r recordConn) WriteToNonBlock(b []byte, _ net.Addr) (int, bool, error) {
	n, err := r.m.raw.Write(b)
	return n, true, err
}

// Close ends pion/dtls's reads and closes the conn.
func (r recordConn) Close() error {
	r.m.close()
	return r.m.raw.Close()
}

func (r recordConn) LocalAddr() net.Addr                { return r.m.raw.LocalAddr() }
func (r recordConn) SetDeadline(t time.Time) error      { return r.m.setDTLSReadDeadline(t) }
func (r recordConn) SetReadDeadline(t time.Time) error  { return r.m.setDTLSReadDeadline(t) }
func (r recordConn) SetWriteDeadline(t time.Time) error { return r.m.raw.SetWriteDeadline(t) }

// sealedConn is the conn pion/sctp runs on over DTLS: it checks each
// decrypted SCTP packet as pconn and dconn check plaintext ones, and keeps
// the association's signs of life, which only authenticated packets count
// for.
type sealedConn struct {
	*dtls.Conn
	raw  roundConn // the UDP conn under DTLS, closed with it
	mux  *recordMux
	rec  *recordCrypt // nil: pion/dtls seals and opens every record
	hook garbageHook
	life alive.Clock
	rtt  rttClock
	rbuf []byte        // ReadPacket's without rec, for pion's one reader
	fwd  chan struct{} // closed when forward returns
	// beforeWait, if set, runs before ReadPacket may wait
	// (SetBeforeWait); pion's reader's only.
	beforeWait func()
}

var _ assocConn = (*sealedConn)(nil)

// logfFunc logs a message, formatted as fmt.Sprintf does.
type logfFunc func(format string, args ...any)

// newSealedConn makes the conn over dc, whose handshake is done, and with
// fast takes the records over from pion/dtls where it can key them.
func newSealedConn(dc *dtls.Conn, m *recordMux, fast bool, log logfFunc) *sealedConn {
	c := &sealedConn{Conn: dc, raw: m.raw, mux: m, rbuf: make([]byte, 8192), fwd: make(chan struct{})}
	c.hook.set(func(error) { _ = c.Close() })
	c.life.Start()
	var rec *recordCrypt
	var err error
	if fast {
		rec, err = recordCryptOf(dc)
	}
	if rec == nil {
		if err != nil && log != nil {
			log("sctp: DTLS records stay with pion/dtls: %v", err)
		}
		close(c.fwd)
		return c
	}
	c.rec = rec
	m.takeOver()
	go c.forward()
	return c
}

// forward puts what pion/dtls decrypts (application data it read before
// the takeover, or from a datagram of several records) on the fast path's
// queue, until the conn closes.
func (c *sealedConn) forward() {
	defer close(c.fwd)
	buf := make([]byte, 8192)
	for {
		n, err := c.Conn.Read(buf)
		if err != nil {
			return
		}
		c.mux.fromPion(append([]byte(nil), buf[:n]...))
	}
}

// setLinger passes the delay to the UDP conn under DTLS.
func (c *sealedConn) setLinger(d time.Duration) { c.raw.setLinger(d) }

func (c *sealedConn) handshakeRTT() time.Duration { return c.rtt.get() }
func (c *sealedConn) garbage() *garbageHook       { return &c.hook }
func (c *sealedConn) signs() *alive.Clock         { return &c.life }

// Read returns the next well-formed packet; a malformed one, which only a
// holder of the cluster secret can have sent, is reported to the hook.
func (c *sealedConn) Read(p []byte) (int, error) {
	if c.rec != nil {
		q, err := c.ReadPacket()
		return copy(p, q), err
	}
	for {
		n, err := c.Conn.Read(p)
		if err != nil {
			return n, err
		}
		if c.admit(p[:n]) {
			return n, nil
		}
	}
}

// admit checks a decrypted packet: a malformed one goes to the hook, a
// well-formed one counts as a sign of life.
func (c *sealedConn) admit(p []byte) bool {
	if err := checkPacket(p); err != nil {
		c.hook.fire(err)
		return false
	}
	c.life.Heard()
	c.rtt.got(p)
	return true
}

// ReadPacket returns the next well-formed packet in a buffer the caller
// owns (pion's readLoop), opening the records itself where it can.
func (c *sealedConn) ReadPacket() ([]byte, error) {
	if c.rec == nil {
		n, err := c.Read(c.rbuf)
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), c.rbuf[:n]...), nil
	}
	for {
		if p, ok := c.mux.takeSlow(); ok {
			if c.admit(p) {
				return p, nil
			}
			continue
		}
		if c.beforeWait != nil && !c.raw.ready() {
			c.beforeWait()
		}
		pk, err := c.raw.next()
		if err != nil {
			if c.mux.woken(err) {
				continue
			}
			return nil, err
		}
		if p, ok := c.open(pk); ok && c.admit(p) {
			return p, nil
		}
	}
}

// SetBeforeWait has ReadPacket call f before it may wait for input, so
// that pion's read loop runs the write rounds the packets it handled asked
// for itself, rather than wake its write loop for each (third_party/pion-sctp,
// write_round.go): one goroutine hand-off less per SACK sent and per SACK
// that opens the window. Only between hosts with the fast path's records
// (rec): on loopback the two loops on two cores carry more.
func (c *sealedConn) SetBeforeWait(f func()) bool {
	if c.rec == nil || isLocal(c.RemoteAddr()) {
		return false
	}
	c.beforeWait = f
	return true
}

// open decrypts pk, if it is an application data record, into a new
// buffer, and reports whether it was one that authenticated; anything
// else goes to pion/dtls. It releases pk's buffer.
func (c *sealedConn) open(pk packet) ([]byte, bool) {
	defer pk.rb.release()
	if !isAppRecord(pk.p) {
		c.mux.toPion(pk.p)
		return nil, false
	}
	return c.rec.openRecord(make([]byte, 0, len(pk.p)-recordOverhead), pk.p)
}

// Write sends one SCTP packet as one DTLS record.
func (c *sealedConn) Write(p []byte) (int, error) {
	c.life.Sent()
	c.rtt.sent(p)
	if c.rec == nil {
		return c.Conn.Write(p)
	}
	b := getRecordBuf(len(p) + recordOverhead)
	defer putBuf(b)
	rec, err := c.rec.sealRecord((*b)[:0], p)
	if err != nil {
		return 0, err
	}
	if _, err := c.raw.Write(rec); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteOwned seals p into a record that the conn under DTLS holds until
// Flush, so that the records of one round of pion's writeLoop leave in one
// batch (one sendmmsg), as plaintext packets do. pion calls it and Flush
// from its writeLoop only.
func (c *sealedConn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	if c.rec == nil {
		c.raw.holdRound()
		n, err := c.Write(p)
		release(p)
		return n, err
	}
	c.life.Sent()
	c.rtt.sent(p)
	b := getRecordBuf(len(p) + recordOverhead)
	rec, err := c.rec.sealRecord((*b)[:0], p)
	release(p)
	if err != nil {
		putBuf(b)
		return 0, err
	}
	*b = rec // sealed in place: rec starts at (*b)[0]
	if _, err := c.raw.writePooled(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush sends the round's records (and any other record written since
// the round began: pion/dtls's own, from its goroutines, wait with them).
func (c *sealedConn) Flush() error { return c.raw.Flush() }

// Close sends DTLS's close_notify and closes the UDP conn.
func (c *sealedConn) Close() error {
	c.mux.close()
	err := c.Conn.Close()
	_ = c.raw.Close()
	<-c.fwd
	return err
}

func (c *sealedConn) LocalAddr() net.Addr  { return c.raw.LocalAddr() }
func (c *sealedConn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetWriteDeadline is a no-op, as on the plaintext conns: pion sets one
// for its own writes, and a DTLS conn whose write deadline passed stays
// unusable.
func (c *sealedConn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only (see SetWriteDeadline).
func (c *sealedConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline bounds ReadPacket (pion's Abort sets one to end its
// read loop).
func (c *sealedConn) SetReadDeadline(t time.Time) error {
	if c.rec != nil {
		return c.mux.setReadDeadline(t)
	}
	return c.Conn.SetReadDeadline(t)
}

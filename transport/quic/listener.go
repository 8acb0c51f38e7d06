package quic

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	quicgo "github.com/quic-go/quic-go"
)

var _ transport.Listener = (*Listener)(nil)

// Listener accepts QUIC associations.
type Listener struct {
	t     *Transport
	cfg   transport.ListenConfig
	ql    *quicgo.Listener
	ready chan *Association

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop and handshakes
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	cert := t.cfg.Certificate
	if cert == nil {
		c, err := selfSigned()
		if err != nil {
			return nil, fmt.Errorf("quic: listen: certificate: %w", err)
		}
		cert = &c
	}
	tc := &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}
	ql, err := quicgo.ListenAddr(addr, tc, t.cfg.quicConfig(cfg.Liveness))
	if err != nil {
		return nil, fmt.Errorf("quic: listen %s: %w", addr, err)
	}
	l := &Listener{t: t, cfg: cfg, ql: ql, ready: make(chan *Association)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Go(l.acceptLoop)
	return l, nil
}

// Addr implements transport.Listener.
func (l *Listener) Addr() net.Addr { return l.ql.Addr() }

// Accept implements transport.Listener.
func (l *Listener) Accept(ctx context.Context) (transport.Association, error) {
	select {
	case a := <-l.ready:
		return a, nil
	case <-l.ctx.Done():
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close implements transport.Listener. quic-go keeps the socket open for
// connections already accepted.
func (l *Listener) Close() error {
	l.cancel()
	err := l.ql.Close()
	l.wg.Wait()
	return err
}

func (l *Listener) acceptLoop() {
	for {
		qc, err := l.ql.Accept(l.ctx)
		if err != nil {
			return
		}
		l.wg.Go(func() { l.serve(qc) })
	}
}

// serve handshakes one connection and hands it to Accept.
func (l *Listener) serve(qc *quicgo.Conn) {
	ctx, cancel := context.WithTimeout(l.ctx, l.t.cfg.HandshakeTimeout)
	defer cancel()
	a, err := l.establish(ctx, qc)
	if err != nil {
		l.logf("quic: association from %s failed: %v", qc.RemoteAddr(), err)
		if errors.Is(err, transport.ErrRefused) { // let the dialer read why
			select {
			case <-qc.Context().Done():
			case <-time.After(time.Second):
			}
		}
		_ = qc.CloseWithError(codeAbort, err.Error())
		return
	}
	select {
	case l.ready <- a:
	case <-l.ctx.Done():
		a.Abort(transport.ErrClosed)
	}
}

// establish runs the listener's handshake and accepts the data streams.
func (l *Listener) establish(ctx context.Context, qc *quicgo.Conn) (*Association, error) {
	ctl, err := qc.AcceptStream(ctx)
	if err != nil {
		return nil, ctxErr(ctx, peerErr(err))
	}
	stop := context.AfterFunc(ctx, func() { ctl.CancelRead(quicgo.StreamErrorCode(codeAbort)) })
	defer stop()
	res, release, err := transport.ListenHandshake(ctx, hsConn{ctl}, l.cfg)
	if err != nil {
		if errors.Is(err, transport.ErrRefused) {
			_ = ctl.Close() // let the reject message out before the close
		}
		return nil, ctxErr(ctx, err)
	}
	streams, err := acceptStreams(ctx, qc, res.Streams)
	if err != nil {
		release()
		return nil, ctxErr(ctx, err)
	}
	return newAssociation(&l.t.cfg, qc, ctl, streams, res, transport.NormLiveness(l.cfg.Liveness), release, l.logf), nil
}

// acceptStreams accepts n data streams and orders them by their index.
func acceptStreams(ctx context.Context, qc *quicgo.Conn, n int) ([]*quicgo.Stream, error) {
	streams := make([]*quicgo.Stream, n)
	for range n {
		st, err := qc.AcceptStream(ctx)
		if err != nil {
			return nil, peerErr(err)
		}
		var b [2]byte
		if d, ok := ctx.Deadline(); ok {
			_ = st.SetReadDeadline(d)
		}
		_, err = io.ReadFull(st, b[:])
		_ = st.SetReadDeadline(time.Time{})
		if err != nil {
			return nil, peerErr(err)
		}
		i := int(binary.BigEndian.Uint16(b[:]))
		if i >= n || streams[i] != nil {
			return nil, fmt.Errorf("%w: data stream index %d (of %d) repeated or out of range", transport.ErrProtocol, i, n)
		}
		streams[i] = st
	}
	return streams, nil
}

func (l *Listener) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
	l.t.logf(format, args...)
}

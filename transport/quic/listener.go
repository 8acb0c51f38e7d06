package quic

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/preauth"
	quicgo "github.com/quic-go/quic-go"
)

var _ transport.Listener = (*Listener)(nil)

// Listener accepts QUIC associations.
//
// It takes connections from quic-go as soon as their TLS handshake starts
// (an early listener), so that a handshake a stranger holds open counts
// against the gate and a refused one is logged. Until a peer's
// certificate has checked out (mutual TLS keyed to the cluster secret) it
// can open no stream; until it has also passed the braid handshake it may
// use only the control stream: a stream opened before that ends the
// connection, the control stream's receive window is small (quicConfig),
// and the connection's window grows only once the peer is in authed. Such
// connections are bounded by a preauth.Gate, in total and per source, the
// oldest evicted first and the silent ones after a second.
type Listener struct {
	t        *Transport
	cfg      transport.ListenConfig
	ql       *quicgo.EarlyListener
	ready    chan *Association
	gate     preauth.Gate
	refusals preauth.Refusals // a line per source per interval, not per peer
	authed   sync.Map         // *quicgo.Conn -> struct{}: connections whose peer authenticated

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loop and handshakes
}

// Listen implements transport.Transport.
func (t *Transport) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	tc, err := t.serverTLS(cfg.Secret)
	if err != nil {
		return nil, fmt.Errorf("quic: listen %s: %w", addr, err)
	}
	l := &Listener{t: t, cfg: cfg, ready: make(chan *Association)}
	l.refusals.Log = l.logf
	qcfg := t.cfg.quicConfig(cfg.Liveness)
	qcfg.AllowConnectionWindowIncrease = func(qc *quicgo.Conn, _ uint64) bool {
		_, ok := l.authed.Load(qc)
		return ok
	}
	ql, err := quicgo.ListenAddrEarly(addr, tc, qcfg)
	if err != nil {
		return nil, fmt.Errorf("quic: listen %s: %w", addr, err)
	}
	l.ql = ql
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
	l.refusals.Close()
	return err
}

func (l *Listener) acceptLoop() {
	for {
		qc, err := l.ql.Accept(l.ctx)
		if err != nil {
			return
		}
		ctx, cancel := context.WithCancelCause(l.ctx)
		slot := l.gate.Enter(preauth.Source(qc.RemoteAddr()), func() {
			cancel(errEvicted)
			_ = qc.CloseWithError(codeAbort, errEvicted.Error())
		})
		l.wg.Go(func() {
			defer cancel(nil)
			defer slot.Leave()
			l.serve(ctx, qc, slot)
		})
	}
}

// errEvicted ends the handshake of a connection pushed out of the gate.
var errEvicted = errors.New("unauthenticated for too long, or evicted by newer connections (a flood of unauthenticated peers?)")

// errEarlyStream is a stream opened before the peer authenticated.
var errEarlyStream = fmt.Errorf("%w: a stream other than the control stream opened before authentication", transport.ErrProtocol)

// serve handshakes one connection and hands it to Accept.
func (l *Listener) serve(ctx context.Context, qc *quicgo.Conn, slot *preauth.Slot) {
	ctx, cancel := context.WithTimeout(ctx, l.t.cfg.HandshakeTimeout)
	defer cancel()
	a, err := l.establish(ctx, qc, slot)
	if err != nil {
		evicted := errors.Is(context.Cause(ctx), errEvicted)
		if evicted {
			err = errEvicted
		}
		if l.cfg.Refused != nil {
			l.cfg.Refused(qc.RemoteAddr(), err)
		}
		l.refusals.Note(preauth.Source(qc.RemoteAddr()), "quic: association from %s failed: %v", qc.RemoteAddr(), err)
		if evicted {
			return
		}
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
func (l *Listener) establish(ctx context.Context, qc *quicgo.Conn, slot *preauth.Slot) (*Association, error) {
	if err := handshakeTLS(ctx, qc); err != nil {
		return nil, ctxErr(ctx, err)
	}
	ctl, err := qc.AcceptStream(ctx)
	if err != nil {
		return nil, ctxErr(ctx, peerErr(err))
	}
	stop := context.AfterFunc(ctx, func() { ctl.CancelRead(quicgo.StreamErrorCode(codeAbort)) })
	defer stop()
	w := l.watchStreams(ctx, qc)
	defer w.stop()
	cfg := slot.Config(l.cfg, func() {
		w.authed.Store(true)
		l.authed.Store(qc, struct{}{})
		context.AfterFunc(qc.Context(), func() { l.authed.Delete(qc) })
	})
	res, release, err := transport.ListenHandshake(ctx, slot.Conn(hsConn{ctl}), cfg)
	if err != nil {
		if errors.Is(err, transport.ErrRefused) {
			_ = ctl.Close() // let the reject message out before the close
		}
		if w.early.Load() {
			err = errEarlyStream
		}
		return nil, ctxErr(ctx, err)
	}
	streams, err := acceptStreams(ctx, w.next, res.Streams)
	if err != nil {
		release()
		return nil, ctxErr(ctx, err)
	}
	return newAssociation(&l.t.cfg, qc, ctl, streams, res, transport.NormLiveness(l.cfg.Liveness), release, l.logf), nil
}

// streamWatch accepts the data streams while the handshake runs, so that a
// peer opening one before it authenticated is cut off at once.
type streamWatch struct {
	authed atomic.Bool // set once the peer's MAC checked out
	early  atomic.Bool // a stream came before that; the connection is closed
	ch     chan *quicgo.Stream
	errc   chan error // the accept loop's end, buffered
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *Listener) watchStreams(ctx context.Context, qc *quicgo.Conn) *streamWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &streamWatch{ch: make(chan *quicgo.Stream), errc: make(chan error, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			st, err := qc.AcceptStream(ctx)
			if err == nil && !w.authed.Load() {
				w.early.Store(true)
				err = errEarlyStream
				_ = qc.CloseWithError(codeAbort, err.Error())
			}
			if err != nil {
				w.errc <- err
				return
			}
			select {
			case w.ch <- st:
			case <-ctx.Done():
				st.CancelRead(quicgo.StreamErrorCode(codeAbort))
				st.CancelWrite(quicgo.StreamErrorCode(codeAbort))
				w.errc <- ctx.Err()
				return
			}
		}
	}()
	return w
}

// next returns the next data stream accepted.
func (w *streamWatch) next(ctx context.Context) (*quicgo.Stream, error) {
	select {
	case st := <-w.ch:
		return st, nil
	case err := <-w.errc:
		w.errc <- err
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop ends the watch and waits for its goroutine.
func (w *streamWatch) stop() {
	w.cancel()
	<-w.done
}

// acceptStreams accepts n data streams and orders them by their index.
func acceptStreams(ctx context.Context, next func(context.Context) (*quicgo.Stream, error), n int) ([]*quicgo.Stream, error) {
	streams := make([]*quicgo.Stream, n)
	for range n {
		st, err := next(ctx)
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
		return
	}
	l.t.logf(format, args...)
}

package quic

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/braidhq/braid/transport"
	quicgo "github.com/quic-go/quic-go"
)

var _ transport.Transport = (*Transport)(nil)

// Transport is the QUIC transport.
type Transport struct {
	cfg Config
}

// New returns a Transport; zero Config fields take their defaults.
func New(cfg Config) *Transport { return &Transport{cfg: cfg.withDefaults()} }

// Name implements transport.Transport.
func (*Transport) Name() string { return "quic" }

// Dial implements transport.Transport.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.HandshakeTimeout)
	defer cancel()
	tc, err := t.clientTLS(addr, cfg.Secret)
	if err != nil {
		return nil, fmt.Errorf("quic: dial %s: %w", addr, err)
	}
	qc, err := quicgo.DialAddr(ctx, addr, tc, t.cfg.quicConfig(cfg.Liveness))
	if err != nil {
		return nil, fmt.Errorf("quic: dial %s: %w", addr, authErr(err))
	}
	a, err := t.dialAssoc(ctx, qc, cfg)
	if err != nil {
		_ = qc.CloseWithError(codeAbort, err.Error())
		return nil, fmt.Errorf("quic: dial %s: %w", addr, authErr(err))
	}
	return a, nil
}

// dialAssoc runs the handshake on a new control stream, then opens the
// data streams.
func (t *Transport) dialAssoc(ctx context.Context, qc *quicgo.Conn, cfg transport.DialConfig) (*Association, error) {
	ctl, err := qc.OpenStreamSync(ctx)
	if err != nil {
		return nil, peerErr(err)
	}
	stop := context.AfterFunc(ctx, func() { ctl.CancelRead(quicgo.StreamErrorCode(codeAbort)) })
	res, err := transport.DialHandshake(ctx, hsConn{ctl}, cfg)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	streams := make([]*quicgo.Stream, res.Streams)
	for i := range streams {
		if streams[i], err = qc.OpenStreamSync(ctx); err != nil {
			return nil, ctxErr(ctx, peerErr(err))
		}
		if _, err = streams[i].Write(binary.BigEndian.AppendUint16(nil, uint16(i))); err != nil {
			return nil, peerErr(err)
		}
	}
	return newAssociation(&t.cfg, qc, ctl, streams, res, transport.NormLiveness(cfg.Liveness), nil, t.logf), nil
}

// ctxErr prefers the context's error when it has ended.
func ctxErr(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return fmt.Errorf("%w (%v)", ce, err)
	}
	return err
}

func (t *Transport) logf(format string, args ...any) {
	t.cfg.Logger.Warn(fmt.Sprintf(format, args...))
}

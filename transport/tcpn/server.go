package tcpn

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
	"github.com/braidhq/braid/transport/internal/mux"
	"github.com/braidhq/braid/transport/internal/preauth"
	"github.com/braidhq/braid/transport/internal/tcpconn"
)

// server is one listener's connection setup: handshakes on first
// connections, and the table of associations waiting for their other
// connections.
type server struct {
	t   *Transport
	cfg transport.ListenConfig

	mu      sync.Mutex // guards pending and each pending's fields
	pending map[[tokenLen]byte]*pending
}

// pending is an association whose extra connections are still arriving.
type pending struct {
	conns  []mux.Conn // by stream index; conns[0] ran the handshake
	joined int
	full   chan struct{} // closed when every connection has joined
}

// replayConn returns a message already read before the handshake reads on.
type replayConn struct {
	first []byte
	frame.HandshakeConn
}

func (r *replayConn) ReadMsg() ([]byte, error) {
	if p := r.first; p != nil {
		r.first = nil
		return p, nil
	}
	return r.HandshakeConn.ReadMsg()
}

// setup handles one accepted connection: a join, or a new association.
// A join carries its own proof (its MAC), checked at once; a handshake
// leaves the gate once the dialer's MAC checks out (slot.Config).
func (s *server) setup(ctx context.Context, c tcpconn.Conn, slot *preauth.Slot) (transport.Association, error) {
	stop := tcpconn.InterruptOn(ctx, c)
	hc := frame.HandshakeConn{C: c}
	first, err := slot.Conn(hc).ReadMsg()
	if err == nil && isJoin(first) {
		return nil, s.handOff(ctx, c, hc, stop, first)
	}
	var res transport.HandshakeResult
	release := func() {}
	if err == nil {
		res, release, err = transport.ListenHandshake(ctx, &replayConn{first, hc}, slot.Config(s.cfg, nil))
	}
	var conns []mux.Conn
	if err == nil {
		conns, err = s.gather(ctx, c, hc, res.Streams)
	}
	if err = tcpconn.Settle(ctx, c, stop, err); err != nil {
		if len(conns) > 1 {
			closeAll(conns[1:]) // joined, but the association will not start
		}
		release()
		return nil, err
	}
	return mux.New(conns, s.t.muxConfig(res, release)), nil
}

// handOff joins c to its association; once joined, c belongs to it.
func (s *server) handOff(ctx context.Context, c tcpconn.Conn, hc frame.HandshakeConn, stop func() bool, msg []byte) error {
	if err := s.join(msg, c, hc); err != nil {
		return fmt.Errorf("tcpn: join: %w", tcpconn.Settle(ctx, c, stop, err))
	}
	stop()
	c.SetDeadline(time.Time{})
	return tcpconn.ErrHandedOff
}

// gather sends the association token on the first connection and waits for
// the other n-1 connections to join.
func (s *server) gather(ctx context.Context, c tcpconn.Conn, hc frame.HandshakeConn, n int) ([]mux.Conn, error) {
	var token [tokenLen]byte
	rand.Read(token[:])
	p := &pending{conns: make([]mux.Conn, n), full: make(chan struct{})}
	p.conns[0] = c
	if n == 1 {
		close(p.full)
	}
	s.mu.Lock()
	s.pending[token] = p
	s.mu.Unlock()
	err := hc.WriteMsg(appendToken(nil, token))
	if err == nil {
		select {
		case <-p.full:
		case <-ctx.Done():
			err = fmt.Errorf("%w: waiting for %d stream connections: %w", transport.ErrProtocol, n-1, ctx.Err())
		}
	}
	s.mu.Lock()
	delete(s.pending, token)
	s.mu.Unlock()
	if err != nil {
		closeAll(p.conns[1:])
		return nil, err
	}
	return p.conns, nil
}

// join attaches c to the pending association named in msg and acks it.
func (s *server) join(msg []byte, c tcpconn.Conn, hc frame.HandshakeConn) error {
	token, i, err := parseJoin(msg, s.cfg.Secret)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending[token]
	switch {
	case p == nil:
		return fmt.Errorf("%w: unknown or expired association token", transport.ErrProtocol)
	case i < 1 || i >= len(p.conns) || p.conns[i] != nil:
		return fmt.Errorf("%w: join for stream %d of %d is out of range or repeated", transport.ErrProtocol, i, len(p.conns))
	}
	// The ack goes out before the association can start sending on c.
	if err := hc.WriteMsg([]byte(ackMagic)); err != nil {
		return err
	}
	p.conns[i] = c
	if p.joined++; p.joined == len(p.conns)-1 {
		close(p.full)
	}
	return nil
}

package mux

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// Recv returns the next message on stream s.
func (a *Assoc) Recv(ctx context.Context, s int) ([]byte, error) {
	if err := a.checkStream(s); err != nil {
		return nil, err
	}
	select {
	case <-a.lclosed:
		return nil, transport.ErrClosed
	default:
	}
	return a.queues[s].Pop(ctx, a.lclosed)
}

// readLoop is link i's receive goroutine; the last one to exit finishes the
// association.
func (a *Assoc) readLoop(i int) {
	defer func() {
		if a.live.Add(-1) == 0 {
			a.finish()
		}
	}()
	if err := a.demux(i); err != nil {
		a.fail(err)
	}
}

// demux reads link i until it ends. It returns nil for an orderly end and
// otherwise the association's failure.
func (a *Assoc) demux(i int) error {
	l := a.links[i]
	r := frame.NewReader(stampConn{Conn: l.conn, clock: &l.clock, lv: &a.lv}, a.cfg.Streams)
	if !a.cfg.Striped { // striped, Data frames are refused on sight; blocks have their own accounting
		r.Budget = a.recvBudget
	}
	for {
		h, msg, err := r.Next()
		if err != nil {
			return a.readErr(err)
		}
		if h.Type == frame.Data && a.cfg.Striped || h.Type == frame.Block && !a.cfg.Striped {
			return fmt.Errorf("%w: %s frame on a %s association", transport.ErrProtocol, h.Type, a.kind())
		}
		if h.Type != frame.Ping {
			l.clock.peerIdle.Store(false)
		}
		switch h.Type {
		case frame.Data:
			a.dataRead(l)
			if err := a.deliver(i, h, msg); err != nil {
				return err
			}
			a.dataRead(l) // the quiet starts once it is delivered
		case frame.Block:
			a.dataRead(l)
			if err := a.deliverBlock(h, msg); err != nil {
				return a.readErr(err) // a local close while waiting for room is no failure
			}
			a.dataRead(l)
		case frame.Close:
			a.peerClosed(i)
			return nil
		case frame.Abort:
			return fmt.Errorf("%w: peer aborted: %q", transport.ErrPeerClosed, msg)
		case frame.Ping:
			// A sign of life, like every read, which may announce
			// idle (liveness.go).
			idle := h.Flags&frame.FlagIdle != 0
			if idle && a.cfg.IdleLiveness <= 0 {
				return fmt.Errorf("%w: idle ping on an association without idle bounds", transport.ErrProtocol)
			}
			l.clock.peerIdle.Store(idle)
		}
	}
}

// deliver queues a complete message; frames for another link's stream are
// a protocol violation.
func (a *Assoc) deliver(i int, h frame.Header, msg []byte) error {
	if len(a.links) > 1 && int(h.Stream) != i {
		return fmt.Errorf("%w: frame for stream %d on the link of stream %d", transport.ErrProtocol, h.Stream, i)
	}
	if msg != nil {
		a.push(h.Stream, msg)
	}
	return nil
}

func (a *Assoc) kind() string {
	if a.cfg.Striped {
		return "striped"
	}
	return "framed"
}

// readErr classifies the error that ended a link's reader.
func (a *Assoc) readErr(err error) error {
	select {
	case <-a.lclosed:
		return nil // we closed: the peer's EOF or our own Close ends the read
	default:
	}
	if errors.Is(err, transport.ErrProtocol) || errors.Is(err, transport.ErrMessageTooLarge) {
		a.setErr(err) // before the abort frames: see failAndTell
		a.tryAbortFrames(err.Error())
		return err
	}
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: connection closed without a close frame", transport.ErrPeerClosed)
	}
	return fmt.Errorf("%w: connection lost: %v", transport.ErrPeerClosed, err)
}

// peerClosed handles the peer's Close on link i: no more messages will come
// on its streams, and we will send nothing more on it.
func (a *Assoc) peerClosed(i int) {
	a.closing.Store(true)
	a.setErr(transport.ErrPeerClosed)
	// Striped, blocks may still be on their way through the other links.
	allClosed := a.cfg.Striped && int(a.linksClosed.Add(1)) == len(a.links)
	for s := range a.cfg.Streams {
		if allClosed || !a.cfg.Striped && a.linkOf(s) == a.links[i] {
			a.queues[s].End(transport.ErrPeerClosed)
		}
	}
	a.links[i].ended.Store(true)
	a.links[i].conn.Close()
}

package ksctp

import (
	"context"
	"errors"
	"fmt"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// Recv returns the next message on stream s. Messages that arrived before
// the peer closed are still returned; after a local Close or Abort, Recv
// fails at once.
func (a *assoc) Recv(ctx context.Context, s int) ([]byte, error) {
	st, err := a.stream(s)
	if err != nil {
		return nil, err
	}
	for {
		if err := a.Err(); err != nil && isLocal(err) {
			return nil, err
		}
		st.mu.Lock()
		if len(st.queue) > 0 {
			m := st.queue[0]
			st.queue[0] = qmsg{}
			st.queue = st.queue[1:]
			st.released += m.unpaid
			if len(st.queue) == 0 {
				st.released += st.pUnpaid
				st.pUnpaid = 0
			}
			due := st.grantLocked(false)
			st.mu.Unlock()
			if due {
				wake(a.creditK)
			}
			return m.b, nil
		}
		st.mu.Unlock()
		if err := a.Err(); err != nil {
			return nil, err
		}
		select {
		case <-st.ready:
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// recvLoop drains the socket: it reassembles each stream's SCTP messages
// (the kernel may deliver one in pieces, the last with MSG_EOR) and acts
// on them. Every piece is a sign of life. It never waits for the
// application (credit bounds the queues), and it ends the association when
// the socket fails. It starts with the pieces the handshake set aside.
func (a *assoc) recvLoop(early []earlyPiece) {
	defer a.finish()
	for _, e := range early {
		if err := a.take(e.info, e.eor, e.b); err != nil {
			a.abort(err, err)
			return
		}
	}
	buf := make([]byte, sctpwire.MaxSCTPMessage)
	oob := make([]byte, 256)
	for {
		pc, err := a.c.readPiece(buf, oob)
		if err != nil {
			a.terminate(mapErr(err))
			return
		}
		if pc.notif {
			if pc.eor && assocEnded(buf[:pc.n]) {
				a.terminate(errPeerEOF)
				return
			}
			continue
		}
		a.clock.Heard()
		if !pc.hasRI {
			err = protoErr("message without SCTP_RCVINFO")
		} else {
			err = a.take(pc.info, pc.eor, buf[:pc.n])
		}
		if err != nil {
			a.abort(err, err)
			return
		}
	}
}

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", transport.ErrProtocol, fmt.Sprintf(format, args...))
}

// take adds one piece to its SCTP stream's message and acts on the message
// once complete. b is only borrowed.
func (a *assoc) take(info rcvInfo, eor bool, b []byte) error {
	if info.PPID != sctpwire.PPID {
		return protoErr("payload protocol id %d on SCTP stream %d", info.PPID, info.SID)
	}
	sid := int(info.SID)
	if sid > len(a.streams) {
		return protoErr("message on SCTP stream %d, %d streams negotiated", sid, len(a.streams))
	}
	piece := &a.ctlPiece
	if sid != sctpwire.ControlStream {
		piece = &a.streams[sid-1].piece
	}
	if len(*piece) == 0 && eor {
		return a.onMessage(sid, b) // whole in one piece: no copy
	}
	*piece = append(*piece, b...)
	if len(*piece) > sctpwire.MaxSCTPMessage {
		return protoErr("SCTP message over %d bytes on stream %d", sctpwire.MaxSCTPMessage, sid)
	}
	if !eor {
		return nil
	}
	err := a.onMessage(sid, *piece)
	*piece = (*piece)[:0]
	return err
}

// onMessage acts on one whole SCTP message on SCTP stream sid.
func (a *assoc) onMessage(sid int, p []byte) error {
	if sid == sctpwire.ControlStream {
		c, err := sctpwire.ParseControl(p, len(a.streams))
		if err == nil && c.Type == sctpwire.CtlCredit {
			a.streams[c.Stream].grant(c.Limit)
		}
		return err // a ping is only a sign of life, recorded by recvLoop
	}
	h, body, err := sctpwire.ParseFragment(p, sctpwire.MaxFragment)
	if err != nil {
		return err
	}
	st := a.streams[sid-1]
	st.mu.Lock()
	due, err := st.onFragment(h, body)
	st.mu.Unlock()
	if due {
		wake(a.creditK)
	}
	return err
}

// onFragment adds one parsed fragment to the stream and reports whether a
// grant is due. The caller holds st.mu.
func (st *stream) onFragment(h sctpwire.FragHeader, body []byte) (bool, error) {
	if h.Flags&sctpwire.FlagAbandon != 0 {
		if !st.inMsg || h.MsgID != st.asmID {
			return false, protoErr("abandon for unknown message %d", h.MsgID)
		}
		st.asm, st.inMsg = nil, false
		st.released += st.pUnpaid
		st.pUnpaid = 0
		return st.grantLocked(false), nil
	}
	cost := uint64(len(body) + sctpwire.FragHeaderLen)
	st.received += cost
	if st.received > st.granted {
		return false, protoErr("peer sent %d bytes beyond its credit", st.received-st.granted)
	}
	if err := st.place(h, body); err != nil {
		return false, err
	}
	switch {
	case h.Flags&sctpwire.FlagLast != 0:
		st.queue = append(st.queue, qmsg{b: st.asm, unpaid: st.pUnpaid + cost})
		st.asm, st.inMsg, st.pUnpaid = nil, false, 0
		wake(st.ready)
	case len(st.queue) == 0:
		st.released += cost // nothing finished to wait for: see sctpwire
	default:
		st.pUnpaid += cost
	}
	return st.grantLocked(false), nil
}

// place appends body to the message being reassembled, starting one at
// offset 0; fragments must come in order.
func (st *stream) place(h sctpwire.FragHeader, body []byte) error {
	if h.Offset == 0 {
		if st.inMsg {
			return protoErr("message %d started before message %d ended", h.MsgID, st.asmID)
		}
		st.asm = make([]byte, 0, min(int(h.Total), maxPrealloc))
		st.asmID, st.total, st.inMsg = h.MsgID, h.Total, true
	} else if !st.inMsg || h.MsgID != st.asmID {
		return protoErr("fragment for unknown message %d", h.MsgID)
	}
	if int(h.Offset) != len(st.asm) || h.Total != st.total {
		return protoErr("message %d fragment at %d/%d, expected %d/%d", h.MsgID, h.Offset, h.Total, len(st.asm), st.total)
	}
	st.asm = append(st.asm, body...)
	return nil
}

// isLocal reports whether err means the association was closed here.
func isLocal(err error) bool { return errors.Is(err, transport.ErrClosed) }

// maxPrealloc bounds the buffer allocated for a message from its header's
// claimed total; a larger message grows as its fragments arrive.
const maxPrealloc = 256 << 10

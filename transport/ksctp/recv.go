package ksctp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/braidhq/braid/transport"
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
			due := st.consumed(m.cost)
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
// (the kernel may deliver one in pieces, the last with MSG_EOR) and hands
// them to deliver. Every piece is a sign of life. It never waits for the
// application (credit bounds the queues), and it ends the association when
// the socket fails.
func (a *assoc) recvLoop() {
	defer a.finish()
	buf := make([]byte, 64<<10)
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
		if err := a.take(pc, buf[:pc.n]); err != nil {
			a.abort(err, err)
			return
		}
	}
}

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", transport.ErrProtocol, fmt.Sprintf(format, args...))
}

// take appends one piece to its stream's SCTP message and delivers the
// message once complete.
func (a *assoc) take(pc piece, b []byte) error {
	if !pc.hasRI {
		return protoErr("message without SCTP_RCVINFO")
	}
	if int(pc.info.SID) >= len(a.streams) {
		return protoErr("message on SCTP stream %d of %d", pc.info.SID, len(a.streams))
	}
	st := a.streams[pc.info.SID]
	st.piece = append(st.piece, b...)
	if len(st.piece) > FragmentSize {
		return protoErr("SCTP message over %d bytes on stream %d", FragmentSize, pc.info.SID)
	}
	if !pc.eor {
		return nil
	}
	err := a.deliver(st, pc.info.PPID, st.piece)
	st.piece = st.piece[:0]
	return err
}

// deliver acts on one whole SCTP message of kind ppid.
func (a *assoc) deliver(st *stream, ppid uint32, p []byte) error {
	switch ppid {
	case ppidMore, ppidEnd:
		if err := st.start(); err != nil {
			return err
		}
		st.asm = append(st.asm, p...)
		if len(st.asm) > transport.MaxMessageSize {
			return protoErr("message over %d bytes", transport.MaxMessageSize)
		}
		st.mu.Lock()
		st.outstanding += int64(len(p))
		st.mu.Unlock()
		if ppid == ppidEnd {
			st.push(st.asm, int64(len(st.asm)))
			st.asm, st.inMsg = nil, false
		}
	case ppidEmpty:
		if st.inMsg || len(p) != 1 {
			return protoErr("bad empty message")
		}
		if err := st.start(); err != nil {
			return err
		}
		st.mu.Lock()
		st.outstanding++
		st.mu.Unlock()
		st.push([]byte{}, 1)
		st.inMsg = false
	case ppidDrop:
		if !st.inMsg {
			return protoErr("drop without a partial message")
		}
		st.mu.Lock()
		due := st.consumed(int64(len(st.asm)))
		st.mu.Unlock()
		st.asm, st.inMsg = nil, false
		if due {
			wake(a.creditK)
		}
	case ppidCredit:
		return st.credit(p)
	case ppidHandshake:
		return protoErr("handshake message after the handshake")
	case ppidPing:
		if st != a.streams[0] || len(p) != 1 {
			return protoErr("malformed ping")
		}
		// A sign of life, recorded by recvLoop like every message.
	default:
		return protoErr("unknown payload protocol id %d", ppid)
	}
	return nil
}

// start checks, at a message's first fragment, that the peer had credit.
func (st *stream) start() error {
	if st.inMsg {
		return nil
	}
	st.mu.Lock()
	over := st.outstanding >= window
	st.mu.Unlock()
	if over {
		return protoErr("peer sent beyond its flow-control window")
	}
	st.inMsg = true
	return nil
}

func (st *stream) push(b []byte, cost int64) {
	st.mu.Lock()
	st.queue = append(st.queue, qmsg{b: b, cost: cost})
	st.mu.Unlock()
	wake(st.ready)
}

// credit applies a credit message from the peer.
func (st *stream) credit(p []byte) error {
	if len(p) != 8 {
		return protoErr("credit message of %d bytes", len(p))
	}
	n := int64(binary.BigEndian.Uint64(p))
	st.mu.Lock()
	ok := n > 0 && st.sendCredit+n <= window
	if ok {
		st.sendCredit += n
	}
	st.mu.Unlock()
	if !ok {
		return protoErr("credit of %d bytes exceeds the window", n)
	}
	wake(st.creditc)
	return nil
}

// isLocal reports whether err means the association was closed here.
func isLocal(err error) bool { return errors.Is(err, transport.ErrClosed) }

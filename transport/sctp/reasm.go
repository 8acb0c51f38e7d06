package sctp

import (
	"fmt"

	"github.com/braidhq/braid/transport"
)

// onFragment adds one parsed fragment to the stream. It returns a credit
// limit to send (0 for none), or an error that must abort the association.
// owned says body may be kept as the whole message (see adopt).
func (r *recvStream) onFragment(h fragHeader, body []byte, owned bool) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h.flags&flagAbandon != 0 {
		return r.abandonLocked(h)
	}
	cost := uint64(len(body) + fragHeaderLen)
	r.received += cost
	if r.received > r.granted {
		return 0, fmt.Errorf("%w: peer sent %d bytes beyond its credit", transport.ErrProtocol, r.received-r.granted)
	}
	if err := r.placeLocked(h, body, owned); err != nil {
		return 0, err
	}
	if h.flags&flagLast != 0 {
		r.q = append(r.q, message{data: r.partial, unpaid: r.pUnpaid + cost})
		r.reasm.put(int64(r.pTotal))
		r.partial, r.pUnpaid = nil, 0
		r.poke()
	} else if len(r.q) == 0 {
		r.released += cost
	} else {
		r.pUnpaid += cost
	}
	l, _ := r.grantLocked(false)
	return l, nil
}

// placeLocked copies body into the message being reassembled, starting one
// at offset 0. The message's buffer grows with what arrives (see grow),
// so a header that announces a big message costs only its budget.
func (r *recvStream) placeLocked(h fragHeader, body []byte, owned bool) error {
	if h.offset == 0 {
		if r.partial != nil {
			return fmt.Errorf("%w: message %d started before message %d ended", transport.ErrProtocol, h.msgID, r.pID)
		}
		if err := r.reasm.get(int64(h.total)); err != nil {
			return err
		}
		r.pID, r.pTotal = h.msgID, int(h.total)
		if owned {
			r.partial, r.pOff = body, len(body) // adopted, see adopt
			return nil
		}
		r.partial, r.pOff = make([]byte, 0, min(int(h.total), reasmStart)), 0
	} else if r.partial == nil || h.msgID != r.pID {
		return fmt.Errorf("%w: fragment for unknown message %d", transport.ErrProtocol, h.msgID)
	}
	if int(h.offset) != r.pOff || int(h.total) != r.pTotal || r.pOff+len(body) > r.pTotal {
		return fmt.Errorf("%w: message %d fragment of %d bytes at %d/%d, expected one at %d/%d",
			transport.ErrProtocol, h.msgID, len(body), h.offset, h.total, r.pOff, r.pTotal)
	}
	r.partial = grow(r.partial, len(body), r.pTotal)
	r.partial = append(r.partial, body...)
	r.pOff = len(r.partial)
	return nil
}

// reasmStart is the most a message's buffer starts with: a peer that
// announces a 64 MiB message and sends a byte holds 1 MiB, not 64.
const reasmStart = 1 << 20

// grow returns b with room for n more bytes, growing it fourfold at a time
// (a copy of a third of the message on average, for messages over
// reasmStart), never beyond total.
func grow(b []byte, n, total int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), min(total, max(4*cap(b), len(b)+n)))
	copy(nb, b)
	return nb
}

// abandonLocked drops the partial message its sender gave up on.
func (r *recvStream) abandonLocked(h fragHeader) (uint64, error) {
	if r.partial == nil || h.msgID != r.pID {
		return 0, fmt.Errorf("%w: abandon for unknown message %d", transport.ErrProtocol, h.msgID)
	}
	r.dropPartialLocked()
	r.released += r.pUnpaid
	r.pUnpaid = 0
	l, _ := r.grantLocked(false)
	return l, nil
}

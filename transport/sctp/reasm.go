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
		r.reasm.put(int64(len(r.partial)))
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
// at offset 0.
func (r *recvStream) placeLocked(h fragHeader, body []byte, owned bool) error {
	if h.offset == 0 {
		if r.partial != nil {
			return fmt.Errorf("%w: message %d started before message %d ended", transport.ErrProtocol, h.msgID, r.pID)
		}
		if owned {
			r.partial, r.pID, r.pOff = body, h.msgID, len(body) // adopted, see adopt
			return r.reasm.get(int64(h.total))
		}
		if err := r.reasm.get(int64(h.total)); err != nil {
			return err
		}
		r.partial, r.pID, r.pOff = make([]byte, h.total), h.msgID, 0
	} else if r.partial == nil || h.msgID != r.pID {
		return fmt.Errorf("%w: fragment for unknown message %d", transport.ErrProtocol, h.msgID)
	}
	if int(h.offset) != r.pOff || int(h.total) != len(r.partial) {
		return fmt.Errorf("%w: message %d fragment at %d/%d, expected %d/%d",
			transport.ErrProtocol, h.msgID, h.offset, h.total, r.pOff, len(r.partial))
	}
	r.pOff += copy(r.partial[r.pOff:], body)
	return nil
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

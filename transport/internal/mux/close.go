package mux

import (
	"fmt"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// markClosed records a local Close or Abort; it reports false if one came
// before.
func (a *Assoc) markClosed(err error) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.localClosed {
		return false
	}
	a.localClosed = true
	if a.err == nil {
		a.err = err
	}
	close(a.lclosed)
	a.stopReaders()
	return true
}

// Close closes gracefully: each link gets a close frame after the frames
// already written, then a half-close; the links are closed once the peer has
// closed its side too, or after CloseTimeout.
func (a *Assoc) Close() error {
	if !a.closeStarted.CompareAndSwap(false, true) {
		<-a.done
		return nil
	}
	deadline := time.Now().Add(a.cfg.CloseTimeout)
	a.drainSends(deadline)
	a.drainBlocks(deadline)
	if !a.markClosed(transport.ErrClosed) {
		<-a.done // aborted meanwhile
		return nil
	}
	for _, l := range a.links {
		a.sendClose(l, deadline)
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-a.done:
	case <-t.C:
		a.closeLinks()
		<-a.done
	}
	return nil
}

// drainSends waits, until deadline, for the messages already being sent:
// Close delivers them whole. New Sends fail from the moment Close starts.
func (a *Assoc) drainSends(deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for _, sem := range a.ssem {
		select {
		case sem <- struct{}{}: // held for good: the association is closing
		case <-a.lclosed:
			return
		case <-a.done:
			return
		case <-t.C:
			return
		}
	}
}

// sendClose writes a close frame on l and half-closes it.
func (a *Assoc) sendClose(l *link, deadline time.Time) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case l.wsem <- struct{}{}:
	case <-a.done:
		return
	case <-t.C:
		return
	}
	defer func() { <-l.wsem }()
	l.ended.Store(true)
	l.conn.SetWriteDeadline(deadline)
	var hdr [frame.HeaderLen]byte
	frame.Header{Type: frame.Close}.Put(hdr[:])
	if _, err := l.conn.Write(hdr[:]); err == nil {
		l.conn.CloseWrite()
	}
}

// Abort tears the association down at once. The peer is told reason when
// the link is free to carry an abort frame.
func (a *Assoc) Abort(reason error) {
	if reason == nil {
		reason = fmt.Errorf("aborted")
	}
	if a.markClosed(fmt.Errorf("%w: aborted: %v", transport.ErrClosed, reason)) {
		a.tryAbortFrames(reason.Error())
	}
	a.closeLinks()
	<-a.done
}

// failAndTell records err as the association's failure, tells the peer why
// on every link whose writer is idle, and fails. The failure is recorded
// before the abort frames go out: the peer closes its links on reading
// one, and the EOF our readers then see must not be taken for the cause.
func (a *Assoc) failAndTell(err error) {
	a.setErr(err)
	a.tryAbortFrames(err.Error())
	a.fail(err)
}

// tryAbortFrames writes an abort frame on every link whose writer is idle,
// with a short deadline; it never waits for a busy link.
func (a *Assoc) tryAbortFrames(reason string) {
	if len(reason) > frame.MaxReason {
		reason = reason[:frame.MaxReason]
	}
	msg := frame.Header{Type: frame.Abort, Len: uint32(len(reason))}.Append(nil)
	msg = append(msg, reason...)
	for _, l := range a.links {
		select {
		case l.wsem <- struct{}{}:
			l.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			l.conn.Write(msg)
			<-l.wsem
		default:
		}
	}
}

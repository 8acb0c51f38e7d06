package sctp

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/braidhq/braid/transport"
	"github.com/pion/sctp"
)

// readControl reads credit grants until the association ends. Its end is
// how a peer's close or abort is noticed.
func (a *Association) readControl() {
	defer a.readers.Done()
	buf := make([]byte, 64)
	for {
		n, _, err := a.ctl.ReadSCTP(buf)
		if err != nil {
			a.fail(a.peerErr(err))
			return
		}
		s, l, err := parseCredit(buf[:n], len(a.send))
		if err != nil {
			a.fail(err)
			return
		}
		a.send[s].grant(l)
	}
}

// readData drains logical stream i's SCTP stream into its queue, so that
// pion's shared receive buffer never fills up behind an unread stream.
func (a *Association) readData(i int) {
	defer a.readers.Done()
	r, fr := a.recv[i], &fragReader{st: a.data[i], small: make([]byte, smallRead)}
	for {
		buf, err := fr.read()
		var l uint64
		if err == nil {
			l, err = a.onFragment(r, fr, buf)
		}
		if l > 0 {
			a.sendCredit(i, l)
		}
		if err != nil {
			err = a.peerErr(err)
			r.fail(err, false)
			a.fail(err)
			return
		}
	}
}

// onFragment parses one fragment and hands it to r.
func (a *Association) onFragment(r *recvStream, fr *fragReader, buf []byte) (uint64, error) {
	h, body, err := parseFragment(buf, maxFragment)
	if err != nil {
		return 0, err
	}
	owned := len(body) > smallRead && h.offset == 0 && h.flags&flagLast != 0
	if owned {
		fr.spare = nil // the message keeps buf
	}
	return r.onFragment(h, body, owned)
}

// smallRead is the read buffer every stream keeps; larger fragments get a
// buffer of their exact size.
const smallRead = 4 << 10

// fragReader reads whole SCTP messages from one stream.
type fragReader struct {
	st    *sctp.Stream
	small []byte
	spare []byte // last large buffer, reused unless a message adopted it
}

// read returns the next SCTP message. pion reports a message too large for
// the buffer (with its size) without consuming it.
func (f *fragReader) read() ([]byte, error) {
	n, _, err := f.st.ReadSCTP(f.small)
	if !errors.Is(err, io.ErrShortBuffer) {
		return f.small[:n], err
	}
	if n > fragHeaderLen+maxFragment {
		return nil, fmt.Errorf("%w: oversize fragment (%d bytes)", transport.ErrProtocol, n-fragHeaderLen)
	}
	if cap(f.spare) < n {
		f.spare = make([]byte, n)
	}
	buf := f.spare[:n:n]
	n, _, err = f.st.ReadSCTP(buf)
	return buf[:n], err
}

// peerErr classifies a pion read error: after a local close it is the local
// error, otherwise the peer closed, aborted or was lost.
func (a *Association) peerErr(err error) error {
	select {
	case <-a.done:
		return a.endErr()
	default:
	}
	if errors.Is(err, transport.ErrProtocol) || errors.Is(err, transport.ErrMessageTooLarge) {
		return err
	}
	if errors.Is(err, io.EOF) {
		return transport.ErrPeerClosed
	}
	return fmt.Errorf("%w: %v", transport.ErrPeerClosed, err)
}

// terminate ends the association once; later callers wait for the first.
// abort sends an SCTP ABORT; otherwise a local close shuts down gracefully.
func (a *Association) terminate(cause error, abort bool) {
	a.endOnce.Do(func() {
		a.errMu.Lock()
		a.err = cause
		a.errMu.Unlock()
		close(a.done)
		local := errors.Is(cause, transport.ErrClosed)
		if local {
			for _, r := range a.recv {
				r.fail(cause, true)
			}
		}
		a.stop(cause, abort, local)
		a.readers.Wait()
		for _, r := range a.recv {
			r.fail(cause, false)
		}
		if a.release != nil {
			a.release()
		}
		close(a.finished)
	})
	<-a.finished
}

// stop ends pion's association: ABORT, graceful SHUTDOWN, or just release.
func (a *Association) stop(cause error, abort, local bool) {
	switch {
	case abort:
		a.pa.Abort(cause.Error())
	case local:
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.CloseTimeout)
		err := a.pa.Shutdown(ctx)
		cancel()
		if err != nil {
			a.pa.Abort("close timed out")
		}
	}
	_ = a.pa.Close()
	_ = a.conn.Close()
}

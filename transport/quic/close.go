package quic

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/braidhq/braid/transport"
	quicgo "github.com/quic-go/quic-go"
)

// Close implements transport.Association: it finishes the streams, waits
// for the peer to confirm it has read them to their end (or CloseTimeout),
// then closes the connection.
func (a *Association) Close() error {
	a.terminate(transport.ErrClosed, codeClose)
	return nil
}

// Abort implements transport.Association.
func (a *Association) Abort(reason error) {
	if reason == nil {
		reason = errors.New("aborted")
	}
	a.terminate(fmt.Errorf("%w: %v", transport.ErrClosed, reason), codeAbort)
}

// watch waits for the control stream to end: the peer's FIN starts a
// graceful close, an error means the connection is gone.
func (a *Association) watch() {
	var b [1]byte
	_, err := a.ctl.Read(b[:])
	close(a.peerFin)
	select {
	case <-a.local:
		return
	default:
	}
	switch {
	case err == nil:
		a.fail(fmt.Errorf("%w: data on the control stream", transport.ErrProtocol))
	case errors.Is(err, io.EOF):
		a.peerClosing()
	default:
		go a.terminate(a.peerErr(err), codeClose)
	}
}

// peerClosing answers the peer's graceful close: once every stream has been
// read to its end, FIN the control stream and end the association.
func (a *Association) peerClosing() {
	waited := make(chan struct{})
	go func() { a.readers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(a.cfg.CloseTimeout):
	}
	_ = a.ctl.Close()
	a.terminate(transport.ErrPeerClosed, codeClose)
}

// terminate ends the association once; later callers wait for the first.
func (a *Association) terminate(cause error, code quicgo.ApplicationErrorCode) {
	a.endOnce.Do(func() {
		a.errMu.Lock()
		a.err = cause
		a.errMu.Unlock()
		local := errors.Is(cause, transport.ErrClosed)
		if local {
			close(a.local)
		}
		close(a.done)
		if local && code == codeClose {
			a.finishStreams()
		}
		_ = a.qc.CloseWithError(code, cause.Error())
		a.readers.Wait()
		for _, q := range a.queues {
			q.End(cause)
		}
		<-a.peerFin
		if a.release != nil {
			a.release()
		}
		close(a.finished)
	})
	<-a.finished
}

// finishStreams sends FIN on every stream whose sender is idle within the
// close timeout, then on the control stream, and waits for the peer's FIN.
func (a *Association) finishStreams() {
	deadline := time.After(a.cfg.CloseTimeout)
	for i, st := range a.streams {
		select {
		case a.locks[i] <- struct{}{}:
			_ = st.Close()
		case <-deadline:
			return
		}
	}
	_ = a.ctl.Close()
	select {
	case <-a.peerFin:
	case <-deadline:
	}
}

package sctp

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/sctpwire"
	"github.com/pion/sctp"
)

// sendPing sends a braid ping on the control stream (see liveness.go).
func (a *Association) sendPing() {
	var b [sctpwire.PingLen]byte
	a.ctlMu.Lock()
	_, err := a.ctl.WriteSCTP(sctpwire.AppendPing(b[:0]), ppi)
	a.ctlMu.Unlock()
	if err != nil {
		a.fail(fmt.Errorf("%w: control stream: %v", transport.ErrPeerClosed, err))
	}
}

// hsConn runs the braid handshake over the control stream.
type hsConn struct {
	st *sctp.Stream
	// gate, on a listener, learns when the accept message leaves.
	gate *streamGate
}

var _ transport.HandshakeConn = hsConn{}

func (c hsConn) WriteMsg(p []byte) error {
	if c.gate != nil && transport.IsAccept(p) {
		c.gate.authenticated() // before the dialer can know
	}
	if _, err := c.st.WriteSCTP(p, ppi); err != nil {
		return fmt.Errorf("%w: %v", transport.ErrPeerClosed, err)
	}
	return nil
}

func (c hsConn) ReadMsg() ([]byte, error) {
	buf := make([]byte, transport.MaxHandshakeMessage)
	n, _, err := c.st.ReadSCTP(buf)
	switch {
	case errors.Is(err, io.ErrShortBuffer):
		return nil, fmt.Errorf("%w: oversize handshake message", transport.ErrProtocol)
	case errors.Is(err, io.EOF):
		return nil, transport.ErrPeerClosed
	case err != nil:
		return nil, fmt.Errorf("%w: %v", transport.ErrPeerClosed, err)
	}
	return buf[:n], nil
}

// streamGate checks the SCTP streams the peer opens: only 1..n are valid
// once n is negotiated. pion announces a new incoming stream on a small
// channel and drops its data while that channel is full, so acceptLoop
// drains it for the association's whole life.
//
// On a listener (strict) a dialer may use no stream but the control stream
// before the listener has accepted it: pion would buffer whatever a peer
// that does not know the secret sends there, up to its whole receive
// window, so such a peer is aborted at once.
type streamGate struct {
	strict bool
	mu     sync.Mutex // guards the fields below
	authed bool       // the accept message has been sent
	// violation is why a strict gate aborted the association.
	violation error
	n         int
	early     []uint16
	fail      func(error)
}

func (g *streamGate) acceptLoop(pa *sctp.Association) {
	for {
		st, err := pa.AcceptStream()
		if err != nil {
			return
		}
		if id := st.StreamIdentifier(); !g.seen(id) {
			err := fmt.Errorf("%w: data on stream %d before authentication", transport.ErrProtocol, id)
			g.mu.Lock()
			g.violation = err
			g.mu.Unlock()
			pa.Abort(err.Error())
			return
		}
	}
}

// abortedFor is why the gate aborted the association, or nil.
func (g *streamGate) abortedFor() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.violation
}

// authenticated records that the listener is sending its accept.
func (g *streamGate) authenticated() {
	g.mu.Lock()
	g.authed = true
	g.mu.Unlock()
}

// seen checks a stream the peer opened; false means a strict gate saw a
// data stream before authentication.
func (g *streamGate) seen(id uint16) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		if g.strict && !g.authed && id != 0 {
			return false
		}
		g.early = append(g.early, id)
		return true
	}
	g.checkLocked(id)
	return true
}

func (g *streamGate) checkLocked(id uint16) {
	if int(id) > g.n {
		g.fail(fmt.Errorf("%w: data on SCTP stream %d, %d streams negotiated", transport.ErrProtocol, id, g.n))
	}
}

// set records the negotiated count and checks streams seen before it.
func (g *streamGate) set(n int, fail func(error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n, g.fail = n, fail
	for _, id := range g.early {
		g.checkLocked(id)
	}
	g.early = nil
}

package sctp

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v5/deadline"
)

// recordMux shares a DTLS association's UDP conn (a roundConn) between
// pion/dtls and the fast path (record.go). Until the handshake is done,
// pion/dtls's read goroutine reads the conn (recordConn.ReadFrom). Then
// the fast path takes it over (takeOver): pion/sctp's read loop reads every
// datagram itself, opens the application data records, and passes
// anything else (a retransmitted handshake flight, an alert) to pion/dtls
// through toDTLS. Application data that pion/dtls read before the
// takeover, or from a datagram of several records, comes back decrypted
// through pion/dtls's Read, which a forwarding goroutine (sealedConn.forward)
// puts on slow.
type recordMux struct {
	raw roundConn
	// mu is held by pion/dtls's read goroutine while it reads raw, so
	// that takeOver can wait for its last read to end.
	mu   sync.Mutex
	fast atomic.Bool // taken over: raw is the fast path's

	toDTLS chan []byte               // records for pion/dtls, after the takeover
	dtlsDL *deadline.Deadline        // pion/dtls's read deadline, after the takeover
	slow   chan []byte               // plaintext packets from pion/dtls's Read
	userDL atomic.Pointer[time.Time] // the fast path's read deadline (pion/sctp's)
	closed chan struct{}
	once   sync.Once
}

// pastDeadline is a read deadline that has passed: setting it wakes a
// blocked read.
var pastDeadline = time.Unix(1, 0)

const (
	// toDTLSQueue and slowQueue bound the packets waiting for pion/dtls's
	// read goroutine and for the fast path's reader; more are dropped, as
	// UDP would.
	toDTLSQueue = 16
	slowQueue   = 64
)

func newRecordMux(raw roundConn) *recordMux {
	return &recordMux{raw: raw, toDTLS: make(chan []byte, toDTLSQueue), dtlsDL: deadline.New(),
		slow: make(chan []byte, slowQueue), closed: make(chan struct{})}
}

// readForDTLS is what pion/dtls reads: the conn's next datagram until the
// takeover, then the records the fast path passes on.
func (m *recordMux) readForDTLS(b []byte) (int, error) {
	for {
		if m.fast.Load() {
			select {
			case rec := <-m.toDTLS:
				return copy(b, rec), nil
			case <-m.dtlsDL.Done():
				return 0, os.ErrDeadlineExceeded
			case <-m.closed:
				return 0, net.ErrClosed
			}
		}
		m.mu.Lock()
		if m.fast.Load() {
			m.mu.Unlock()
			continue
		}
		n, err := m.raw.Read(b)
		m.mu.Unlock()
		if err != nil && m.fast.Load() && errors.Is(err, os.ErrDeadlineExceeded) {
			continue // takeOver woke this read
		}
		return n, err
	}
}

// setDTLSReadDeadline is pion/dtls's SetReadDeadline: the conn's until the
// takeover, then its wait for records.
func (m *recordMux) setDTLSReadDeadline(t time.Time) error {
	if m.fast.Load() {
		m.dtlsDL.Set(t)
		return nil
	}
	return m.raw.SetReadDeadline(t)
}

// takeOver hands the conn to the fast path: it wakes pion/dtls's read if
// one is blocked, and returns once that read has ended.
func (m *recordMux) takeOver() {
	m.fast.Store(true)
	_ = m.raw.SetReadDeadline(pastDeadline)
	m.mu.Lock()
	_ = m.raw.SetReadDeadline(time.Time{})
	m.mu.Unlock()
}

// toPion passes a copy of a datagram to pion/dtls, dropping it when
// pion/dtls is that far behind.
func (m *recordMux) toPion(p []byte) {
	select {
	case m.toDTLS <- append([]byte(nil), p...):
	default:
	}
}

// fromPion queues a plaintext packet that pion/dtls decrypted for the fast
// path's reader and wakes it.
func (m *recordMux) fromPion(p []byte) {
	select {
	case m.slow <- p:
		_ = m.raw.SetReadDeadline(pastDeadline)
	default:
	}
}

// takeSlow returns a packet from slow, if one waits.
func (m *recordMux) takeSlow() ([]byte, bool) {
	select {
	case p := <-m.slow:
		return p, true
	default:
		return nil, false
	}
}

// setReadDeadline is the fast path's read deadline.
func (m *recordMux) setReadDeadline(t time.Time) error {
	m.userDL.Store(&t)
	return m.raw.SetReadDeadline(t)
}

// woken reports whether a read that ended with err was woken by fromPion
// (a passed deadline that is not the reader's own); if so it restores the
// reader's deadline, so that the reader can look at slow and read again.
// fromPion queues before it sets the deadline and the reader looks after
// it restores its own, so no packet waits for the next datagram.
func (m *recordMux) woken(err error) bool {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	var dl time.Time
	if p := m.userDL.Load(); p != nil {
		dl = *p
	}
	if !dl.IsZero() && !time.Now().Before(dl) {
		return false
	}
	_ = m.raw.SetReadDeadline(dl)
	return true
}

// close ends pion/dtls's waits for records.
func (m *recordMux) close() { m.once.Do(func() { close(m.closed) }) }

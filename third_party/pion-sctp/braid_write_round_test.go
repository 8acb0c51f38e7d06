// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"bytes"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundConn is a UDP conn with ReadPacket, WriteOwned and, if accept,
// SetBeforeWait, which calls the hook before every read. It counts the
// packets written on the goroutine that reads (readLoop's).
type roundConn struct {
	net.Conn
	accept   bool
	before   func()
	reader   atomic.Uint64 // the reading goroutine's id
	byReader atomic.Int64  // packets written on it
	all      atomic.Int64
	buf      [1 << 16]byte
}

func (c *roundConn) SetBeforeWait(f func()) bool {
	if !c.accept {
		return false
	}
	c.before = f

	return true
}

func (c *roundConn) ReadPacket() ([]byte, error) {
	c.reader.Store(goroutineID())
	if c.before != nil {
		c.before()
	}
	n, err := c.Conn.Read(c.buf[:])

	return append([]byte(nil), c.buf[:n]...), err
}

func (c *roundConn) WriteOwned(p []byte, release func([]byte)) (int, error) {
	defer release(p)
	c.all.Add(1)
	if goroutineID() == c.reader.Load() {
		c.byReader.Add(1)
	}

	return c.Conn.Write(p)
}

func (c *roundConn) Flush() error { return nil }

// goroutineID is the calling goroutine's id, from its stack trace's first
// line ("goroutine 12 [running]:").
func goroutineID() uint64 {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	id, _ := strconv.ParseUint(f[1], 10, 64)

	return id
}

// TestBraidInlineRounds: on a conn that calls before it waits, the read
// loop sends the rounds that the packets it handled asked for, SACKs on the
// receiving side and DATA that SACKs let go on the sending side, and the
// data arrives whole; on a conn that declines, every packet leaves from the
// write loop, as before.
func TestBraidInlineRounds(t *testing.T) {
	for _, accept := range []bool{true, false} {
		var conns [2]*roundConn
		piper := func(t *testing.T) (net.Conn, net.Conn) {
			t.Helper()
			a, b := pipeDump(t)
			conns[0], conns[1] = &roundConn{Conn: a, accept: accept}, &roundConn{Conn: b, accept: accept}

			return conns[0], conns[1]
		}
		a0, a1, err := association(t, piper)
		require.NoError(t, err)

		s0, err := a0.OpenStream(1, PayloadTypeWebRTCBinary)
		require.NoError(t, err)
		msg := bytes.Repeat([]byte("braid"), 2000) // 10 kB
		const n = 100
		done := make(chan error, 1)
		go func() {
			for range n {
				if _, err := s0.Write(msg); err != nil {
					done <- err

					return
				}
			}
			done <- nil
		}()
		s1, err := a1.AcceptStream()
		require.NoError(t, err)
		require.NoError(t, s1.SetReadDeadline(time.Now().Add(time.Minute)))
		buf := make([]byte, 2*len(msg))
		for i := range n {
			m, err := s1.Read(buf)
			require.NoError(t, err, "message %d", i)
			require.Equal(t, msg, buf[:m], "message %d", i)
		}
		require.NoError(t, <-done)

		if accept {
			assert.Positive(t, conns[1].byReader.Load(), "the receiver's read loop sent SACKs")
			assert.Positive(t, conns[0].byReader.Load(), "the sender's read loop sent DATA")
		} else {
			assert.Zero(t, conns[0].byReader.Load()+conns[1].byReader.Load(), "declined: the write loop sends all")
		}
		assert.Positive(t, conns[0].all.Load())
		require.NoError(t, a0.Close())
		require.NoError(t, a1.Close())
	}
}

// TestBraidDeferredRoundBound: a read loop that handles packets without
// waiting runs the round they asked for (a SACK) once maxDeferredPackets
// (32, a batch of braid's listener) have come since the first asked, not
// before: a round per batch.
func TestBraidDeferredRoundBound(t *testing.T) {
	conn := &recordConn{done: make(chan struct{})}
	defer conn.Close() // nolint:errcheck
	cfg := Config{NetConn: conn, LoggerFactory: logging.NewDefaultLoggerFactory()}
	cfg.applyDefaults()
	a, err := createAssociationFromConfig(&cfg)
	require.NoError(t, err)
	a.setState(established)
	a.rounds.on.Store(true)

	require.Equal(t, 32, maxDeferredPackets)
	for i := 1; i <= 2*maxDeferredPackets; i++ {
		a.rounds.inbound.Store(true)
		a.rounds.due.Store(true) // every packet asks for a round
		a.afterInbound()
		ran := !a.rounds.due.Load()
		assert.Equal(t, i%maxDeferredPackets == 0, ran, "packet %d", i)
	}
}

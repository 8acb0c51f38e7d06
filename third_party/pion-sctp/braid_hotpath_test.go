// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/stretchr/testify/require"
)

// traceCounter is a logger factory whose loggers count their Tracef
// calls and print nothing.
type traceCounter struct{ n atomic.Int64 }

func (f *traceCounter) NewLogger(string) logging.LeveledLogger { return countingLogger{f} }

type countingLogger struct{ f *traceCounter }

func (l countingLogger) Trace(string)          { l.f.n.Add(1) }
func (l countingLogger) Tracef(string, ...any) { l.f.n.Add(1) }
func (countingLogger) Debug(string)            {}
func (countingLogger) Debugf(string, ...any)   {}
func (countingLogger) Info(string)             {}
func (countingLogger) Infof(string, ...any)    {}
func (countingLogger) Warn(string)             {}
func (countingLogger) Warnf(string, ...any)    {}
func (countingLogger) Error(string)            {}
func (countingLogger) Errorf(string, ...any)   {}

// hotPathFirstTSN is the first TSN the test receiver expects.
const hotPathFirstTSN = 1000

// newHotPathAssociation returns an established association with no loops
// running (so that a test drives its handlers itself), which expects DATA
// from hotPathFirstTSN and takes packets without a checksum.
func newHotPathAssociation(tb testing.TB, log logging.LoggerFactory) *Association {
	tb.Helper()
	if log == nil {
		log = logging.NewDefaultLoggerFactory()
	}
	a, err := createServerAssociation(Config{NetConn: &dumbConn{}, LoggerFactory: log})
	require.NoError(tb, err)
	a.setState(established)
	a.payloadQueue.init(hotPathFirstTSN - 1)
	a.recvZeroChecksum = true
	tb.Cleanup(a.closeAllTimers)

	return a
}

// dataPacket marshals a packet of one DATA chunk of stream 1, a whole
// message unless first or last say otherwise, without a checksum.
func dataPacket(tb testing.TB, tsn uint32, ssn uint16, payload []byte, first, last bool) []byte {
	tb.Helper()
	p := &packet{sourcePort: 5000, destinationPort: 5000, chunks: []chunk{&chunkPayloadData{
		tsn: tsn, streamIdentifier: 1, streamSequenceNumber: ssn, payloadType: PayloadTypeWebRTCBinary,
		beginningFragment: first, endingFragment: last, userData: payload,
	}}}
	raw, err := p.marshal(false)
	require.NoError(tb, err)

	return raw
}

// holeRound is one round of packets for receiveBehindHole: n whole
// messages behind a missing TSN, then the missing one.
type holeRound struct {
	raws [][]byte
	buf  []byte
}

func newHoleRound(tb testing.TB, n, size int) *holeRound {
	tb.Helper()
	r := &holeRound{buf: make([]byte, size+1024)}
	for range n + 1 {
		r.raws = append(r.raws, dataPacket(tb, 0, 0, make([]byte, size), true, true))
	}

	return r
}

// receiveBehindHole hands a the round's packets, numbered from TSN tsn and
// SSN ssn on, and reads the messages. It returns the next TSN and SSN.
func receiveBehindHole(tb testing.TB, a *Association, r *holeRound, tsn uint32, ssn uint16) (uint32, uint16) {
	tb.Helper()
	n := len(r.raws) - 1
	for i, raw := range r.raws {
		k := (i + 1) % (n + 1) // 1..n, then 0: the missing one last
		// The DATA chunk's TSN and SSN, after the common and chunk headers.
		binary.BigEndian.PutUint32(raw[16:], tsn+uint32(k)) //nolint:gosec // G115
		binary.BigEndian.PutUint16(raw[22:], ssn+uint16(k)) //nolint:gosec // G115
		if err := a.handleInbound(raw); err != nil {
			tb.Fatal(err)
		}
	}
	s := a.streams[1]
	for range n + 1 {
		if _, _, err := s.ReadSCTP(r.buf); err != nil {
			tb.Fatal(err)
		}
	}

	return tsn + uint32(n) + 1, ssn + uint16(n) + 1 //nolint:gosec // G115
}

// TestBraidNoTraceOnHotPath: with tracing compiled out, neither DATA
// behind a hole nor a SACK with gap blocks calls the trace log. Every call
// boxes its arguments, and the one for DATA behind a hole built the gap
// blocks as a string with fmt, for every packet while a TSN was missing:
// at 1% loss on a 50 ms path, always; 13% of a receiver's CPU time.
func TestBraidNoTraceOnHotPath(t *testing.T) {
	var log traceCounter
	rx := newHotPathAssociation(t, &log)
	receiveBehindHole(t, rx, newHoleRound(t, 8, 1000), hotPathFirstTSN, 0)
	rx.lock.Lock()
	rx.createSelectiveAckChunk()
	rx.lock.Unlock()
	require.Zero(t, log.n.Load(), "trace calls receiving DATA behind a hole")

	tx := newHotPathAssociation(t, &log)
	tx.lock.Lock()
	defer tx.lock.Unlock()
	stream := tx.createStream(1, false)
	tx.setRWND(1 << 30)
	tx.cumulativeTSNAckPoint = tx.myNextTSN - 1
	const n = 16
	for i := range uint32(n) {
		c := &chunkPayloadData{tsn: tx.myNextTSN + i, userData: make([]byte, 1000), nSent: 1, stream: stream,
			since: time.Now(), beginningFragment: true, endingFragment: true}
		stream.bufferedAmount += uint64(len(c.userData))
		tx.inflightQueue.pushNoCheck(c)
	}
	first := tx.myNextTSN
	tx.myNextTSN += n
	// The first is acknowledged, the second missing, the rest by a gap block.
	sack := &chunkSelectiveAck{cumulativeTSNAck: first, advertisedReceiverWindowCredit: 1 << 30,
		gapAckBlocks: []gapAckBlock{{start: 2, end: n - 1}}}
	require.NoError(t, tx.handleSack(sack))
	require.Equal(t, 1, tx.inflightQueue.size()-countAcked(tx), "the missing chunk stays in flight")
	require.Zero(t, log.n.Load(), "trace calls processing a SACK with gap blocks")
}

// countAcked counts the acknowledged chunks still in a's inflight queue.
func countAcked(a *Association) int {
	n := 0
	for tsn := a.cumulativeTSNAckPoint + 1; sna32LT(tsn, a.myNextTSN); tsn++ {
		if c, ok := a.inflightQueue.get(tsn); ok && c.acked {
			n++
		}
	}

	return n
}

// BenchmarkBraidReceiveBehindHole: the receive path of a packet of one
// DATA chunk, unmarshaled, handled and read, while a TSN is missing: 16
// packets behind a hole, then the missing one.
func BenchmarkBraidReceiveBehindHole(b *testing.B) {
	const n = 16
	a, r := newHotPathAssociation(b, nil), newHoleRound(b, n, 1200)
	tsn, ssn := uint32(hotPathFirstTSN), uint16(0)
	b.ReportAllocs()
	for b.Loop() {
		tsn, ssn = receiveBehindHole(b, a, r, tsn, ssn)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/packet")
}

// inFlight puts n chunks of size bytes in a's flight, sent once, after
// the cumulative TSN. The caller holds a's lock.
func inFlight(a *Association, n, size int) {
	stream := a.createStream(1, false)
	a.cumulativeTSNAckPoint = a.myNextTSN - 1
	for i := range uint32(n) { //nolint:gosec // G115
		a.inflightQueue.pushNoCheck(&chunkPayloadData{tsn: a.myNextTSN + i, userData: make([]byte, size), nSent: 1,
			stream: stream, since: time.Now(), beginningFragment: true, endingFragment: true})
	}
	a.myNextTSN += uint32(n) //nolint:gosec // G115
}

// TestBraidRetransmitMarks: a write round finds the chunks a timeout marks
// for retransmission, and once it has sent them all, the next round does
// not look through the flight again.
func TestBraidRetransmitMarks(t *testing.T) {
	a := newHotPathAssociation(t, nil)
	a.lock.Lock()
	inFlight(a, 8, 1000)
	a.setRWND(1 << 30)
	a.setCWND(1 << 30)
	budget, consumed := int64(1<<40), false
	require.Empty(t, a.getDataPacketsToRetransmit(&budget, &consumed), "nothing is marked")
	require.False(t, a.rtxMarked, "a look through the whole flight found nothing marked")
	a.lock.Unlock()

	a.onRetransmissionTimeout(timerT3RTX, 1) // marks the whole flight
	a.lock.Lock()
	defer a.lock.Unlock()
	a.setCWND(1 << 30)
	n := 0
	for _, p := range a.getDataPacketsToRetransmit(&budget, &consumed) {
		n += len(p.chunks)
	}
	require.Equal(t, 8, n, "chunks retransmitted after T3-rtx")
	require.False(t, a.rtxMarked)
	require.Empty(t, a.getDataPacketsToRetransmit(&budget, &consumed))
}

// BenchmarkBraidRetransmitScan: a write round's look for chunks to
// retransmit in a flight of 500 (a bandwidth-delay product at 100 Mbit/s
// and 50 ms) with none marked, as nearly every round at 1% loss.
func BenchmarkBraidRetransmitScan(b *testing.B) {
	a := newHotPathAssociation(b, nil)
	a.lock.Lock()
	defer a.lock.Unlock()
	inFlight(a, 500, 1200)
	a.setRWND(1 << 30)
	a.setCWND(1 << 30)
	budget, consumed := int64(1<<40), false
	b.ReportAllocs()
	for b.Loop() {
		if len(a.getDataPacketsToRetransmit(&budget, &consumed)) != 0 {
			b.Fatal("retransmitted")
		}
	}
}

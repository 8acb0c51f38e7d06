// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// Write rounds on the read loop's goroutine.
//
// A packet that readLoop handles mostly asks for a write round: a SACK
// that opens the window asks for new DATA, DATA asks for a SACK. Woken
// for it, the write loop runs on another goroutine, and a wakeup readies
// it: with a processor idle, as at WAN rates there mostly is, the runtime
// wakes a thread for it, which then looks for work and sleeps again. On a
// conn that says when its ReadPacket is about to wait for input
// (beforeWaiter), readLoop instead runs the rounds that the packets it
// handled asked for itself, once what it had read is used up, and the
// write loop sleeps on. The write loop keeps its other rounds (pace timer,
// writes, timers when readLoop is not handling a packet) and every round
// that does more than an established association's: an ABORT, the
// shutdown's.

// beforeWaiter is an optional interface of the net.Conn: SetBeforeWait(f)
// asks ReadPacket to call f, on the goroutine that calls ReadPacket, each
// time before it may wait for input (what it had read is used up), and
// reports whether it will. Called once, from readLoop, before its first
// ReadPacket.
type beforeWaiter interface {
	SetBeforeWait(f func()) bool
}

// inlineRounds is the state of the rounds readLoop runs.
type inlineRounds struct {
	// mu is held for a round (gather and send), by the write loop or
	// readLoop, so that rounds never overlap and the conn's writes stay
	// one goroutine's at a time.
	mu sync.Mutex
	// on: readLoop runs rounds (set before its first packet).
	// inbound: readLoop is handling a packet.
	// due: a wakeup of the write loop was deferred to readLoop.
	// failed: a round readLoop ran failed to write and closed the conn;
	// the write loop ends.
	on, inbound, due, failed atomic.Bool
	// handled counts the packets readLoop handled since due was set
	// (readLoop's only).
	handled int
}

// maxDeferredPackets bounds how many packets readLoop handles after one
// asked for a round before it runs it, so that a reader that never waits
// (a peer whose packets always keep its socket busy) still acknowledges and
// sends in time: a batch's worth (braid's listener reads 32 datagrams a
// recvmmsg, and a busy paced receiver takes some 34 packets at 100 Mbit/s
// in its 4 ms linger; a bound below the batch sent a SACK every 16 of
// them, two for one batch).
const maxDeferredPackets = 32

// startInlineRounds turns the rounds on, if the conn takes a writer's
// rounds whole (ownedWriter) and calls before it waits. The caller is
// readLoop, before its first packet.
func (a *Association) startInlineRounds() bool {
	bw, ok := a.netConn.(beforeWaiter)
	if _, owned := a.netConn.(ownedWriter); !ok || !owned {
		return false
	}
	if !bw.SetBeforeWait(a.runDeferredRound) {
		return false
	}
	a.rounds.on.Store(true)

	return true
}

// endInlineRounds hands a deferred round to the write loop as readLoop
// ends.
func (a *Association) endInlineRounds() {
	if !a.rounds.on.Load() {
		return
	}
	a.rounds.inbound.Store(false)
	if a.rounds.due.Swap(false) {
		a.signalWriteLoop()
	}
}

// deferWake reports whether a wakeup of the write loop is left to
// readLoop, which it is while readLoop handles a packet: readLoop runs
// the round before it next waits. The second look closes the race with
// the packet's end: a wakeup that finds readLoop done with it is sent.
func (a *Association) deferWake() bool {
	if !a.rounds.inbound.Load() {
		return false
	}
	a.rounds.due.Store(true)

	return a.rounds.inbound.Load()
}

// afterInbound ends readLoop's handling of one packet: a round due for
// maxDeferredPackets packets runs now.
func (a *Association) afterInbound() {
	a.rounds.inbound.Store(false)
	if !a.rounds.due.Load() {
		return
	}
	a.rounds.handled++
	if a.rounds.handled >= maxDeferredPackets {
		a.runDeferredRound()
	}
}

// runDeferredRound runs the round a deferred wakeup asked for: on this
// goroutine if no round is running and the association is established
// with no ABORT or SHUTDOWN COMPLETE due, otherwise by waking the write
// loop (a running round's loop runs another after it).
func (a *Association) runDeferredRound() {
	if !a.rounds.due.Swap(false) {
		return
	}
	a.rounds.handled = 0
	if !a.rounds.mu.TryLock() {
		a.signalWriteLoop()

		return
	}
	defer a.rounds.mu.Unlock()
	rawPackets, ok := a.gatherInline()
	if !ok {
		a.signalWriteLoop()

		return
	}
	ow, _ := a.netConn.(ownedWriter)
	if err := a.sendRound(ow, rawPackets); err != nil {
		a.rounds.failed.Store(true)
		a.signalWriteLoop()
	}
}

// gatherInline gathers a round for readLoop, which it declines (false)
// unless the association is established with no ABORT or SHUTDOWN
// COMPLETE due: those rounds end the write loop and stay its own.
func (a *Association) gatherInline() ([][]byte, bool) {
	a.lock.Lock()
	defer a.lock.Unlock()
	if a.getState() != established || a.willSendAbort || a.willSendShutdownComplete {
		return nil, false
	}
	rawPackets, _ := a.gatherOutboundLocked() // established: never the last round

	return rawPackets, true
}

// sendRound writes a round's packets, through ow if not nil (its Flush
// after the last one, and after an ABORT at once, so that abortSentCh
// means sent). A failed write closes the conn, as it may be one-sided,
// leaving readLoop blocked in Read, and is returned. The caller holds
// rounds.mu.
func (a *Association) sendRound(ow ownedWriter, rawPackets [][]byte) error {
	for i, raw := range rawPackets {
		isAbortPacket := len(raw) > int(commonHeaderSize) && raw[commonHeaderSize] == byte(ctAbort)
		size := len(raw)
		var err error
		if ow != nil {
			// The conn gives raw back to packetBuffers. (A conn's plain
			// Write may, against io.Writer's contract, retain raw, as
			// some test conns do, so raw is recycled only this way.)
			_, err = ow.WriteOwned(raw, putPacketBuffer)
			if err == nil && (isAbortPacket || i == len(rawPackets)-1) {
				err = ow.Flush()
			}
		} else {
			_, err = a.netConn.Write(raw)
		}
		if isAbortPacket {
			a.abortSentOnce.Do(func() { close(a.abortSentCh) })
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				a.log.Warnf("[%s] failed to write packets on netConn: %v", a.name, err)
			}
			_ = a.closeNetConn()

			return err
		}
		atomic.AddUint64(&a.bytesSent, uint64(size)) //nolint:gosec // G115
		a.stats.incPacketsSent()
	}

	return nil
}

// SPDX-FileCopyrightText: 2023 The Pion community <https://pion.ly>
// SPDX-License-Identifier: MIT

package sctp

import "time"

// The pace's wakeup on the reader's.
//
// A paced sender wakes on two clocks: its pace timer, when the tokens for
// the next half burst have come (some 265 times a second at 100 Mbit/s
// and 50 ms), and its conn's reader, which lingers a millisecond or two
// after each batch of SACKs to take the next ones together (some 400 a
// second). Each wakeup costs the Go scheduler a thread's wake, search and
// sleep, more than the round itself. When readLoop runs a round just
// before its reader lingers (beforeWaiter's until is set), a pace the
// round holds is left to the reader instead of the timer: the reader
// reads by the pace's time (it ends its linger early if it must), and its
// next call, with or without SACKs, runs the pace's round; a wakeup the
// timer holds (set by a round of the write loop's) the reader takes over
// as it lingers. If that read
// finds nothing the reader is about to wait for input, and its call (with
// a zero until) hands the wakeup back to the timer for the time left; so
// does readLoop's end. Wakeups that the pace held a sender for are as
// timely as the timer's (to the reader's sleep's slack), and the timer
// fires only when SACKs stop coming.

// beforeReaderWait is readLoop's hook on a beforeWaiter conn: it runs the
// round due (deferred, or the pace's, which the reader held), and returns
// when the reader should call again (the pace's time, if the reader holds
// it), given that it next reads by until (zero: it may wait for input).
func (a *Association) beforeReaderWait(until time.Time) time.Time {
	a.lock.Lock()
	a.checkReaderPace(time.Now(), until)
	a.paceReaderUntil = until
	a.lock.Unlock()

	a.runDeferredRound()

	a.lock.Lock()
	defer a.lock.Unlock()
	a.paceReaderUntil = time.Time{}
	if a.paceByReader {
		return a.paceDue
	}

	return time.Time{}
}

// checkReaderPace looks at the pace's wakeup as the reader calls at now,
// about to read by until: one the timer holds, the reader takes if it
// lingers (else each timer's round would set the next); one the reader
// holds that is due is the reader's to run (a round is due, as after the
// timer); one that is not stays the reader's if it reads again by until,
// else it goes back to the timer. The caller should hold the lock.
func (a *Association) checkReaderPace(now, until time.Time) {
	if !a.paceByReader {
		if !a.paceArmed || until.IsZero() || a.paceTimer == nil || !a.paceTimer.Stop() {
			return // none, or the timer's: the reader may wait, or it has fired
		}
		a.paceByReader = true
	}
	switch {
	case !now.Before(a.paceDue):
		a.paceByReader, a.paceArmed = false, false
		a.stats.incPaceWakeups()
		a.rounds.due.Store(true)
	case until.IsZero():
		a.paceToTimer(now)
	}
}

// paceToTimer gives a pace the reader holds back to the timer, for the
// time left. The caller should hold the lock.
func (a *Association) paceToTimer(now time.Time) {
	if !a.paceByReader {
		return
	}
	a.paceByReader = false
	a.resetPaceTimer(max(a.paceDue.Sub(now), 0))
}

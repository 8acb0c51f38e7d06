package server

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
)

// roster holds the workers' signs of life apart from the dispatch loop, so
// that a heartbeat costs a map read and an atomic store in the HTTP
// handler instead of a trip through the loop: 10,000 workers beating every
// second would otherwise queue behind the units and time out.
//
// The loop owns the entries' lifetimes: it puts one when a worker process
// registers and deletes it when the worker is forgotten. A heartbeat goes
// through the loop only when the loop asks for it (liveness.slow): the
// worker is down, or a registration waits to take its name.
//
// The roster also paces the heartbeats: every is the interval workers are
// told, base (Config.HeartbeatInterval) up to rate workers and then
// longer, so that all of them together beat about rate times a second
// (10,000 workers beating every second cost the server a fifth of a core
// in HTTP alone). Each entry remembers the interval its process was last
// told, which sets its timeout.
//
// Linked workers. A worker whose association with this server is up and
// watched (transport.Watched), with a silence bound that would find the
// worker dead no later than its heartbeat timeout, is linked: its
// association is its sign of life, so the server tells it, besides the
// interval, a linked interval (linkedFactor times longer) for the
// heartbeats while the association lasts, and takes it for dead by its
// association alone meanwhile (dispatcher.timeOut skips it). When the
// association ends, its last sign of life is when it last heard from the
// worker, and the heartbeat timeout applies again from there; the worker,
// told by its end of the association, beats at once and at the interval
// from then on. Workers that do not know linked intervals (older ones)
// beat at the interval as before: the answer's extra field is lost on
// them, and they lose nothing.
type roster struct {
	mu sync.RWMutex // guards m; an entry's fields are fixed or atomic
	m  map[string]*liveness

	base, timeout time.Duration          // Config.HeartbeatInterval, HeartbeatTimeout
	rate          int                    // Config.HeartbeatRate
	every         atomic.Int64           // the interval workers are told now, ns
	answer        atomic.Pointer[[]byte] // an api.Beat with every
	linkedAnswer  atomic.Pointer[[]byte] // and with the linked interval too
}

// linkedFactor is how much longer a linked worker's heartbeat interval is
// than the interval: 12.5 s becomes 6¼ min at 10,000 workers, 27
// heartbeats a second where 800 were (docs/scale.md). What a heartbeat carries
// besides a sign of life can wait that long: the interval matters only
// once the association ends, and the heartbeat then sent at once brings
// the current one; a change of the name's holder or of the server (a new
// process, a restart) ends the association, and with it the wait.
const linkedFactor = 30

// liveness is one worker process's signs of life.
type liveness struct {
	epoch uint64       // the process's (0: it does not say); a new process gets a new entry
	last  atomic.Int64 // Unix ns of its last sign of life
	told  atomic.Int64 // the heartbeat interval it was last told, ns
	// slow: the loop wants to hear of the next heartbeat itself.
	slow atomic.Bool
	// heard is Unix ns of the last word of its last linked association,
	// recorded when that ended: a sign of life for its timeout, not one
	// that proves it alive after a registration arrived (names.go).
	heard atomic.Int64
	// quiet and sent are the silence bounds of its association, ns, while
	// one is up and watched (transport.SilenceBounds); 0 otherwise. The
	// loop sets them.
	quiet, sent atomic.Int64
}

func newRoster(base, timeout time.Duration, rate int) *roster {
	r := &roster{m: map[string]*liveness{}, base: base, timeout: timeout, rate: rate}
	r.pace(0)
	return r
}

// pace sets the interval for a server of n workers.
func (r *roster) pace(n int) {
	every := max(r.base, time.Duration(n)*time.Second/time.Duration(r.rate)).Truncate(time.Millisecond)
	if time.Duration(r.every.Load()) == every {
		return
	}
	r.every.Store(int64(every))
	ms := int(every / time.Millisecond)
	b, _ := json.Marshal(api.Beat{HeartbeatMS: ms})
	lb, _ := json.Marshal(api.Beat{HeartbeatMS: ms, LinkedHeartbeatMS: linkedFactor * ms})
	r.answer.Store(&b)
	r.linkedAnswer.Store(&lb)
}

// linked reports whether l's process is linked (see roster): its
// association is up and watched, and its quiet bound q leaves the worker
// time to tell us over HTTP that it lives when the association ends
// without a word (a data-plane partition): q + q/2 + its interval is
// within its heartbeat timeout. The timeout counts from the last word the
// association heard; our end gives up on the worker at most q after it,
// the worker's end at most q after the last word it heard, which is up to
// q/2 (the idle pings' period) later; the worker then beats at once, and
// its heartbeat may take up to an interval of retries to arrive. It holds
// from when the loop marks the association up (link) until it marks it
// down, and only while the process's interval keeps its timeout that
// long. With the defaults (tcpn's idle bound 30 s, heartbeat timeout five
// intervals, the intervals paced to 800 heartbeats a second) that is from
// 9,000 workers on.
func (r *roster) linked(l *liveness) bool {
	q := time.Duration(l.quiet.Load())
	return q > 0 && q+q/2+r.toldOf(l) <= r.timeoutOf(l)
}

// answerFor is the answer to l's heartbeat: with the linked interval if
// l is linked.
func (r *roster) answerFor(l *liveness) []byte {
	if r.linked(l) {
		return *r.linkedAnswer.Load()
	}
	return *r.answer.Load()
}

// link records that l's process has an association up whose bounds are
// quiet and sent (0, 0: not watched, or none up).
func (l *liveness) link(quiet, sent time.Duration) {
	l.quiet.Store(int64(quiet))
	l.sent.Store(int64(sent))
}

// interval is the heartbeat interval workers are told now.
func (r *roster) interval() time.Duration { return time.Duration(r.every.Load()) }

// tell records that l's process is told the interval now, and returns it.
func (r *roster) tell(l *liveness) time.Duration {
	every := r.interval()
	l.told.Store(int64(every))
	return every
}

// timeoutOf is how long l's process may be silent before it is taken for
// dead: the heartbeat timeout, grown as its interval grew from the base.
func (r *roster) timeoutOf(l *liveness) time.Duration {
	return time.Duration(float64(r.timeout) * float64(r.toldOf(l)) / float64(r.base))
}

// toldOf is the heartbeat interval l's process was last told (the base
// before it was told any).
func (r *roster) toldOf(l *liveness) time.Duration {
	return max(time.Duration(l.told.Load()), r.base)
}

// claimWait is how long a registration under a name l's process holds
// waits for a heartbeat from it: two of its intervals.
func (r *roster) claimWait(l *liveness) time.Duration {
	return 2 * max(time.Duration(l.told.Load()), r.base)
}

func (r *roster) get(name string) *liveness {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[name]
}

func (r *roster) put(name string, l *liveness) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[name] = l
}

// remove deletes name's entry if it is still l.
func (r *roster) remove(name string, l *liveness) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[name] == l {
		delete(r.m, name)
	}
}

// seen records a sign of life at now.
func (l *liveness) seen(now time.Time) { l.last.Store(now.UnixNano()) }

// heardBy records that its association last heard from it at t (on the
// loop), unless it heard later before.
func (l *liveness) heardBy(t time.Time) {
	if t.UnixNano() > l.heard.Load() {
		l.heard.Store(t.UnixNano())
	}
}

// lastSeen is the last sign of life: a heartbeat, the registration, or the
// last word of its last linked association.
func (l *liveness) lastSeen() time.Time { return time.Unix(0, max(l.last.Load(), l.heard.Load())) }

// lastBeat is the last heartbeat or registration.
func (l *liveness) lastBeat() time.Time { return time.Unix(0, l.last.Load()) }

// shownSeen is the last sign of life as the workers list shows it at now
// (api.Worker.LastSeen): now while an association that watches the
// worker is up, which it would not be if the worker had been silent for
// its bound; the last heartbeat otherwise.
func (l *liveness) shownSeen(now time.Time) time.Time {
	if l.quiet.Load() > 0 {
		return now
	}
	return l.lastSeen()
}

// otherProcess reports whether epoch is not the process's, as
// workerConn.otherProcess.
func (l *liveness) otherProcess(epoch uint64) bool {
	return l.epoch != 0 && epoch != 0 && epoch != l.epoch
}

// beat handles a heartbeat from worker name's process epoch without the
// loop, when it can: the worker is known, its epoch the holder's, and the
// loop has not asked to hear of it. It returns the answer (an api.Beat),
// nil if it did not.
func (r *roster) beat(name string, epoch uint64, now time.Time) []byte {
	l := r.get(name)
	if l == nil || l.otherProcess(epoch) || l.slow.Load() {
		return nil
	}
	l.seen(now)
	r.tell(l)
	return r.answerFor(l)
}

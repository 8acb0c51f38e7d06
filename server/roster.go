package server

import (
	"sync"
	"sync/atomic"
	"time"
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
type roster struct {
	mu sync.RWMutex // guards m; an entry's fields are fixed or atomic
	m  map[string]*liveness
}

// liveness is one worker process's signs of life.
type liveness struct {
	epoch uint64       // the process's (0: it does not say); a new process gets a new entry
	last  atomic.Int64 // Unix ns of its last sign of life
	// slow: the loop wants to hear of the next heartbeat itself.
	slow atomic.Bool
}

func newRoster() *roster { return &roster{m: map[string]*liveness{}} }

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

// lastSeen is the last sign of life.
func (l *liveness) lastSeen() time.Time { return time.Unix(0, l.last.Load()) }

// otherProcess reports whether epoch is not the process's, as
// workerConn.otherProcess.
func (l *liveness) otherProcess(epoch uint64) bool {
	return l.epoch != 0 && epoch != 0 && epoch != l.epoch
}

// beat handles a heartbeat from worker name's process epoch without the
// loop, when it can: the worker is known, its epoch the holder's, and the
// loop has not asked to hear of it. It reports whether it did.
func (r *roster) beat(name string, epoch uint64, now time.Time) bool {
	l := r.get(name)
	if l == nil || l.otherProcess(epoch) || l.slow.Load() {
		return false
	}
	l.seen(now)
	return true
}

package server

import (
	"context"
	"sync"

	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
)

// readAhead reads the unit inputs of a job of many inputs from the store
// ahead of the dispatch loop, a few at a time, so that the loop, which
// must not wait on a remote store's round trips, mostly finds them in
// memory. It reads in index order, as first attempts mostly go out, after
// the latest unit the loop took; what the loop does not find (a retry, a
// unit out of order, an input that failed to read) it reads itself, as
// without read-ahead. At most readAheadBytes wait in memory.
type readAhead struct {
	ids    [][32]byte // the job's inputs; fixed at split
	skip   func(i int) bool
	cancel context.CancelFunc

	mu    sync.Mutex // guards the fields below
	ready map[int][]byte
	bytes int64 // in ready
	next  int   // the next index to read
	room  chan struct{}
}

const (
	readAheadBytes    = 32 << 20
	readAheadParallel = 8
	// readAheadBehind: inputs read for units this far behind the latest
	// the loop took are dropped (those units were done, or go out later
	// and are read then).
	readAheadBehind = 1024
)

// startReadAhead starts reading j's inputs ahead, if j is a job of many
// inputs fixed at its split (not one over another job's outputs). The
// loop calls it as it adds the job and stops it when it forgets the job.
func (s *Server) startReadAhead(j *jobRun) *readAhead {
	if j.inputs == nil || j.spec.InputJob != "" {
		return nil
	}
	ctx, cancel := context.WithCancel(s.ctx)
	r := &readAhead{ids: j.inputs, skip: j.unitDone, cancel: cancel, ready: map[int][]byte{}, room: make(chan struct{}, 1)}
	for range readAheadParallel {
		s.wg.Go(func() { r.read(ctx, s.store) })
	}
	return r
}

// read reads inputs until there are none left or ctx ends.
func (r *readAhead) read(ctx context.Context, st store.Store) {
	for {
		i, ok := r.claim(ctx)
		if !ok {
			return
		}
		b, err := store.ReadAll(ctx, st, statedb.HexID(r.ids[i]), maxUnitInput)
		if err != nil {
			continue // the loop reads it again and reports the error
		}
		r.mu.Lock()
		if i >= r.next-readAheadBehind-readAheadParallel {
			r.ready[i] = b
			r.bytes += int64(len(b))
		}
		r.mu.Unlock()
	}
}

// claim returns the next index to read, waiting while the inputs read
// and not taken fill the budget.
func (r *readAhead) claim(ctx context.Context) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for r.next < len(r.ids) && r.skip(r.next) {
			r.next++
		}
		if r.next >= len(r.ids) {
			return 0, false
		}
		if r.bytes < readAheadBytes {
			r.next++
			return r.next - 1, true
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			r.mu.Lock()
			return 0, false
		case <-r.room:
		}
		r.mu.Lock()
	}
}

// take returns unit i's input if it was read ahead. It never waits. A
// nil readAhead has nothing.
func (r *readAhead) take(i int) ([]byte, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.ready[i]
	if ok {
		delete(r.ready, i)
		r.bytes -= int64(len(b))
	}
	if i >= r.next {
		r.next = i + 1 // the loop went past the readers: follow it
	}
	if r.bytes >= readAheadBytes { // the readers wait: drop what the loop went past
		for k, old := range r.ready {
			if k < i-readAheadBehind {
				delete(r.ready, k)
				r.bytes -= int64(len(old))
			}
		}
	}
	if r.bytes < readAheadBytes {
		select {
		case r.room <- struct{}{}:
		default:
		}
	}
	return b, ok
}

// stop ends the readers; a nil readAhead has none.
func (r *readAhead) stop() {
	if r != nil {
		r.cancel()
	}
}

// unitDone reports whether unit i has a stored result (a resumed job's
// done units need no input).
func (j *jobRun) unitDone(i int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.settled != nil && j.settled.has(i)
}

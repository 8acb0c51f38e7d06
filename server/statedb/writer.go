package statedb

import (
	"log/slog"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// writer commits state changes to bbolt in groups: everything queued while
// one transaction commits goes into the next, so one fsync covers a burst
// of submits, cancels and unit results, and a caller that needs its change
// on disk before it answers (a submit's 201) waits for about one commit
// however busy the server is.
//
// A change someone waits for (one with an after func) is committed at
// once. Changes nobody waits for (unit results) may wait up to linger for
// company, so that a steady stream of results costs a commit every few
// milliseconds rather than one after another: a crash loses at most that
// much, and those units run again.
//
// Changes commit in the order they were queued, each once. Callers never
// block on the disk unless they ask to (sync, flush) or the queue holds
// maxQueued changes (back-pressure). One goroutine, started by newWriter
// and ended by close, does every write.
type writer struct {
	db    *bolt.DB
	log   *slog.Logger
	names *nameCache // the unit log's worker numbers; only run's goroutine uses it

	mu     sync.Mutex // guards queue, spare, urgent and closed
	room   sync.Cond  // signalled when the goroutine takes the queue
	queue  []Change
	spare  []Change // the previous batch's slice, for reuse
	urgent bool     // queue holds a change someone waits for
	closed bool
	wake   chan struct{} // capacity 1: the goroutine has something to look at
	done   chan struct{} // closed when the goroutine has exited
}

// Change is one queued write. apply runs inside the batch's transaction
// (nil makes a barrier); after, if set, runs on the writer's goroutine
// once that transaction committed (nil error) or failed. after must not
// queue and wait on the writer. A lazy change's after does not hurry the
// commit: it waits for company as a change without one does.
type Change struct {
	apply func(tx *txn) error
	after func(error)
	lazy  bool
}

const (
	// maxQueued bounds the changes waiting for a commit; queueing more
	// blocks.
	maxQueued = 1 << 16
	// linger is how long changes nobody waits for may wait for more;
	// lingerMax changes end the wait early.
	linger    = 10 * time.Millisecond
	lingerMax = 4096
)

func newWriter(db *bolt.DB, log *slog.Logger) *writer {
	w := &writer{db: db, log: log, names: newNameCache(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.room.L = &w.mu
	go w.run()
	return w
}

// queueChange adds a change to the next commit, waiting while maxQueued
// changes wait already. After close, after (if any) gets ErrClosed at
// once.
func (w *writer) queueChange(c Change) {
	w.mu.Lock()
	for len(w.queue) >= maxQueued && !w.closed {
		w.room.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		if c.after != nil {
			c.after(ErrClosed)
		}
		return
	}
	w.queue = append(w.queue, c)
	// Wake the goroutine for the first change, for one someone waits for,
	// and when lingering should end; not for every unit result.
	waited := c.after != nil && !c.lazy
	signal := len(w.queue) == 1 || (waited && !w.urgent) || len(w.queue) == lingerMax
	w.urgent = w.urgent || waited
	w.mu.Unlock()
	if signal {
		w.poke()
	}
}

func (w *writer) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// sync queues apply and waits until it is on disk.
func (w *writer) sync(apply func(tx *txn) error) error {
	done := make(chan error, 1)
	w.queueChange(Change{apply: apply, after: func(err error) { done <- err }})
	return <-done
}

// flush waits until everything queued before it is on disk.
func (w *writer) flush() { _ = w.sync(nil) }

// close commits everything queued and stops the goroutine.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.room.Broadcast()
	w.mu.Unlock()
	w.poke()
	<-w.done
}

func (w *writer) run() {
	defer close(w.done)
	for {
		<-w.wake
		w.lingerForCompany()
		w.mu.Lock()
		batch, closed := w.queue, w.closed
		w.queue, w.spare, w.urgent = w.spare[:0], nil, false
		w.room.Broadcast()
		w.mu.Unlock()
		if len(batch) == 0 {
			if closed {
				return
			}
			continue
		}
		w.commit(batch)
		clear(batch) // drop the closures' references
		w.mu.Lock()
		w.spare = batch[:0]
		if len(w.queue) > 0 || w.closed {
			w.poke() // what came in during the commit
		}
		w.mu.Unlock()
	}
}

// lingerForCompany waits up to linger while the queue holds only changes
// nobody waits for, and fewer than lingerMax.
func (w *writer) lingerForCompany() {
	timer := time.NewTimer(linger)
	defer timer.Stop()
	for {
		w.mu.Lock()
		wait := !w.urgent && !w.closed && len(w.queue) > 0 && len(w.queue) < lingerMax
		w.mu.Unlock()
		if !wait {
			return
		}
		select {
		case <-w.wake:
		case <-timer.C:
			return
		}
	}
}

// commit writes a batch in one transaction. If it fails, each change is
// retried alone, so one bad change costs only itself.
func (w *writer) commit(batch []Change) {
	err := w.db.Update(func(btx *bolt.Tx) error {
		tx := newTxn(btx, w.names)
		for _, c := range batch {
			if c.apply == nil {
				continue
			}
			if err := c.apply(tx); err != nil {
				return err
			}
		}
		return tx.flush()
	})
	if err != nil {
		w.names = newNameCache() // it may hold numbers the failed transaction gave
	}
	if err != nil && len(batch) > 1 {
		w.log.Warn("state batch failed; retrying its changes one by one", "changes", len(batch), "err", err)
		for _, c := range batch {
			w.commit([]Change{c})
		}
		return
	}
	if err != nil {
		w.log.Error("saving state", "err", err)
	}
	for _, c := range batch {
		if c.after != nil {
			c.after(err)
		}
	}
}

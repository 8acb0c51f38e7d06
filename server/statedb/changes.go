package statedb

// Then returns c with after to run once c is committed (nil) or failed:
// on the writer's goroutine, so after must not queue and wait on the DB.
// A change with an after is committed at once, not after a linger.
func (c Change) Then(after func(error)) Change {
	c.after, c.lazy = after, false
	return c
}

// Lazily returns c with after to run once c is committed or failed, as
// Then, but without hurrying the commit: c may wait for company as a
// change without an after does.
func (c Change) Lazily(after func(error)) Change {
	c.after, c.lazy = after, true
	return c
}

// Batch is one change made of cs, applied in order in one transaction
// (their own afters are not run).
func Batch(cs ...Change) Change {
	return Change{apply: func(tx *txn) error {
		for _, c := range cs {
			if c.apply == nil {
				continue
			}
			if err := c.apply(tx); err != nil {
				return err
			}
		}
		return nil
	}}
}

// Queue adds c to the next commit and returns without waiting for the
// disk, unless maxQueued changes already wait (back-pressure). Changes
// commit in the order they were queued. After Close, c's after (if any)
// gets ErrClosed at once.
func (s *DB) Queue(c Change) { s.w.queueChange(c) }

// Sync queues c and waits until it is on disk (or failed); c's own after,
// if any, runs first.
func (s *DB) Sync(c Change) error {
	done := make(chan error, 1)
	after := c.after
	s.w.queueChange(Change{apply: c.apply, after: func(err error) {
		if after != nil {
			after(err)
		}
		done <- err
	}})
	return <-done
}

// Flush waits until everything queued before it is on disk.
func (s *DB) Flush() { s.w.flush() }

package statedb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestWriterOrderAndClose: changes commit in the order they were queued
// (the last write of a key wins), a flush sees everything queued before
// it whether anyone waited for it or not, close commits what is still
// queued, and a change queued after close is refused.
func TestWriterOrderAndClose(t *testing.T) {
	db := testDB(t)
	w := newWriter(db, slog.New(slog.DiscardHandler))
	put := func(k string, v int) Change {
		return Change{apply: func(tx *txn) error {
			return tx.Bucket(jobsBucket).Put([]byte(k), binary.BigEndian.AppendUint64(nil, uint64(v)))
		}}
	}
	for i := range 10_000 {
		w.queueChange(put("last", i))
		w.queueChange(put(fmt.Sprint(i), i))
	}
	w.flush()
	count := func() (n int, last uint64) {
		_ = db.View(func(tx *bolt.Tx) error {
			n = tx.Bucket(jobsBucket).Stats().KeyN
			last = binary.BigEndian.Uint64(tx.Bucket(jobsBucket).Get([]byte("last")))
			return nil
		})
		return n, last
	}
	if n, last := count(); n != 10_001 || last != 9_999 {
		t.Fatalf("after flush: %d keys, last = %d; want 10001 and 9999", n, last)
	}
	for i := range 100 {
		w.queueChange(put(fmt.Sprint("late", i), i))
	}
	w.close()
	if n, _ := count(); n != 10_101 {
		t.Errorf("after close: %d keys, want 10101 (close commits what is queued)", n)
	}
	got := make(chan error, 1)
	w.queueChange(Change{apply: put("x", 1).apply, after: func(err error) { got <- err }})
	if err := <-got; !errors.Is(err, ErrClosed) {
		t.Errorf("change after close: %v, want ErrClosed", err)
	}
}

// TestWriterLazyAfter: a lazy change's after runs once its change is on
// disk, and queueing it does not make the batch urgent (it may wait for
// company, as a unit result without an after does).
func TestWriterLazyAfter(t *testing.T) {
	db := testDB(t)
	w := newWriter(db, slog.New(slog.DiscardHandler))
	defer w.close()
	seen := make(chan bool, 1)
	w.queueChange(Change{
		apply: func(tx *txn) error { return tx.Bucket(jobsBucket).Put([]byte("k"), []byte("v")) },
		after: func(err error) {
			var there bool
			_ = db.View(func(tx *bolt.Tx) error { there = tx.Bucket(jobsBucket).Get([]byte("k")) != nil; return nil })
			seen <- err == nil && there
		},
		lazy: true,
	})
	w.mu.Lock()
	urgent := w.urgent
	w.mu.Unlock()
	if urgent {
		t.Error("a lazy change made the batch urgent")
	}
	if !<-seen {
		t.Error("a lazy change's after ran before its change was on disk")
	}
}

// testDB is a new state database with the jobs bucket, closed when t ends.
func testDB(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "w.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(jobsBucket); return err }); err != nil {
		t.Fatal(err)
	}
	return db
}

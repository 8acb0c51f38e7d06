// Package store defines braid's content-addressed object store: the
// interface every implementation meets, the errors they return, and the
// rules a collector follows. store/local keeps objects in a directory (the
// default, nothing to run); store/s3 keeps them in an S3-compatible bucket,
// where several servers may share them; store/cache puts a bounded local
// read cache in front of either. store/storetest is the conformance suite
// each of them passes.
//
// # Objects
//
// An object's id is the lowercase hex sha256 of its bytes, so an id names
// the same bytes in every store and storing the same bytes twice costs one
// hash and no second copy. Objects are immutable.
//
// # Write, then publish
//
// Put and PutBytes write the bytes somewhere no reader looks (a temporary
// file, a temporary key), hashing on the way, and only then publish them
// under their id in one atomic step (a rename, a single PUT or copy). So a
// reader never sees a partial object, a writer that fails or crashes leaves
// nothing under a real id, and once Put returns the object survives a crash
// of the writer: the server's state database names objects as job results
// the moment Put returns.
//
// # Collection
//
// A store never deletes anything on its own; its owner (the server's
// collector) decides what is garbage. Deciding is racy by nature: the owner
// reads its references at one moment and deletes later, and meanwhile a new
// reference to the same content-addressed id may appear (a unit whose output
// bytes equal an old unreferenced object, a job naming the object as input).
// The stores make this safe with one rule, a lease time per object (Info's
// Created):
//
//   - Put and PutBytes of an object that already exists refresh its lease
//     instead of writing it again; Touch does the same for a caller about to
//     reference an object it did not write. (An object this store refreshed
//     less than Config.TouchEvery ago is not refreshed again: many units
//     writing the same bytes cost nothing each.)
//   - RemoveIfOlder(id, cutoff) deletes only if the lease is still before
//     cutoff, and a refresh and a removal of one id are ordered: either the
//     refresh comes first and the removal keeps the object, or the removal
//     comes first and the write stores the bytes anew (Touch reports
//     ErrNotFound). A writer never returns an id whose object is gone.
//
// The owner's part: take cutoff = now - grace before reading references,
// and record every new reference within grace - TouchEvery of the Put or
// Touch that preceded it. Then an object referenced after the owner read its
// references was refreshed after cutoff, and survives. A store several
// servers share (Shared) adds each server's published references to what
// the collector must read; see Shared.
//
// # Concurrency
//
// Every method of a Store may be called from any number of goroutines at
// once. Close must be the last call.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Errors every implementation returns (wrapped, test with errors.Is).
var (
	ErrNotFound  = errors.New("store: no such object")
	ErrTooLarge  = errors.New("store: object too large")
	ErrInvalidID = errors.New("store: invalid object id (want 64 lowercase hex digits)")
	// ErrUnavailable: the backing service (an S3 endpoint) could not be
	// reached or did not answer in time; the message names it. Nothing was
	// published; the same call may succeed later.
	ErrUnavailable = errors.New("store: object store unavailable")
)

// DefaultMaxSize is the default limit on one object's size.
const DefaultMaxSize = 1 << 30

// Config holds what every implementation takes. Zero values mean the
// documented defaults.
type Config struct {
	// MaxSize is the largest object Put accepts (default DefaultMaxSize).
	MaxSize int64
	// TouchEvery: storing or touching an object this store refreshed less
	// than TouchEvery ago does not refresh it again (default 0: refresh
	// every time). See Collection for what it asks of a collector.
	TouchEvery time.Duration
}

// WithDefaults returns c with its zero values replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.MaxSize <= 0 {
		c.MaxSize = DefaultMaxSize
	}
	return c
}

// Info describes a stored object. Created is the object's lease time: when
// it was last stored (written, written again, or touched). Existing, from
// Put and PutBytes, says the bytes were already stored: nothing was
// written, the object was only refreshed.
type Info struct {
	ID       string    `json:"id"`
	Size     int64     `json:"size"`
	Created  time.Time `json:"created"`
	Existing bool      `json:"existing,omitempty"`
}

// Store is a content-addressed object store. See the package comment for
// the contract; every method may be called concurrently.
type Store interface {
	// Put stores everything r yields and returns the object's info
	// (Existing if the bytes were already stored). It reads at most
	// MaxSize+1 bytes and fails with ErrTooLarge past MaxSize. On any
	// error nothing is published.
	Put(ctx context.Context, r io.Reader) (Info, error)
	// PutBytes stores p. When the object already exists it only hashes
	// and refreshes the object's lease.
	PutBytes(ctx context.Context, p []byte) (Info, error)
	// Open returns a reader of an object's bytes and its info; the caller
	// closes the reader. The reader may fail mid-way (ErrUnavailable) but
	// never yields bytes of another object.
	Open(ctx context.Context, id string) (io.ReadCloser, Info, error)
	// Stat returns an object's info.
	Stat(ctx context.Context, id string) (Info, error)
	// Touch refreshes an object's lease and returns its info; call it
	// before recording a new reference to an object the caller did not
	// just store. ErrNotFound if the object is gone.
	Touch(ctx context.Context, id string) (Info, error)
	// List returns every object, sorted by id.
	List(ctx context.Context) ([]Info, error)
	// Remove deletes an object; ErrNotFound if there is none.
	Remove(ctx context.Context, id string) error
	// RemoveIfOlder deletes an object only if its lease is before cutoff,
	// and reports whether it did. A missing object is not an error.
	RemoveIfOlder(ctx context.Context, id string, cutoff time.Time) (bool, error)
	// Usage reports how many objects the store holds and their total size,
	// as counted at open and kept up to date by this store's own writes
	// and removals.
	Usage() (objects, bytes int64)
	// MaxSize is the largest object Put accepts.
	MaxSize() int64
	// Close releases what the store holds. It does not delete objects.
	Close() error
}

// Shared is a Store that several servers may use at once (store/s3). Each
// one publishes, under its own owner id, the complete set of objects it
// references, and collectors honour every owner's set: an object another
// server's job uses is never collected.
//
// The owner's part, beside the Collection rule: publish at least every
// TouchEvery/2 a set taken after every reference recorded before it, and
// publish a final one on a clean stop. Then a set older than TouchEvery
// that is not final means its owner crashed or lost the store, and may
// have references it never published: collectors wait for it (the
// owner's restart publishes again), or for an operator to remove it.
type Shared interface {
	Store
	// PublishRefs replaces this owner's published set of references; final
	// marks it as its owner's last (a clean stop): it stays honoured, and
	// its age no longer holds collection back.
	PublishRefs(ctx context.Context, ids [][32]byte, final bool) error
	// OthersRefs calls fn for each object another owner's set names. It
	// fails with ErrStaleRefs when a set that is not final is older than
	// the staleness bound: its owner's newest references may be missing,
	// and a collector must delete nothing this round.
	OthersRefs(ctx context.Context, fn func(id [32]byte)) error
}

// ErrStaleRefs: another owner's published references are too old to rely
// on (it crashed, or cannot reach the store). Collection waits for it.
var ErrStaleRefs = errors.New("store: another server's published references are stale")

// ValidID reports whether id has the form of an object id.
func ValidID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ReadAll returns a whole object, refusing objects over limit bytes before
// reading them.
func ReadAll(ctx context.Context, s Store, id string, limit int64) ([]byte, error) {
	r, info, err := s.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if info.Size > limit {
		return nil, fmt.Errorf("%w: object %s has %d bytes, limit here is %d", ErrTooLarge, id, info.Size, limit)
	}
	b := make([]byte, info.Size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("store: reading object %s: %w", id, err)
	}
	return b, nil
}

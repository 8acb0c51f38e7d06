// Package cache puts a bounded read cache on local disk in front of a
// store.Store (braid server --store-cache DIR --store-cache-max BYTES):
// an object read once from a remote store (store/s3) is read from the
// cache directory the next times, as the inputs of repeat jobs and of
// jobs that share an input are.
//
// Reads fill the cache as they go: the bytes are copied to a temporary
// file while the caller reads them, and the file takes the object's name
// only once it is whole and its sha256 is the object's id, so a cached
// file is always right. When the files pass the bound, the least recently
// read go first. Objects bigger than an eighth of the bound are not
// cached, so that one of them cannot empty the cache.
//
// Everything but Open goes to the store behind. Remove and RemoveIfOlder
// drop the cached copy too; an object another server removed may still be
// read from this cache, which is harmless: ids are content addresses, and
// only unreferenced objects are collected.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/braidhq/braid/store"
)

// Store is a store.Store with a read cache. Sharing (store.Shared) passes
// through when the store behind shares.
type Store struct {
	store.Store
	dir string
	max int64
	log *slog.Logger

	mu   sync.Mutex // guards used, and orders renames into place with eviction
	used int64
}

// Shared is a Store whose store behind is a store.Shared.
type Shared struct {
	*Store
	sh store.Shared
}

// PublishRefs passes through.
func (s *Shared) PublishRefs(ctx context.Context, ids [][32]byte, final bool) error {
	return s.sh.PublishRefs(ctx, ids, final)
}

// OthersRefs passes through.
func (s *Shared) OthersRefs(ctx context.Context, fn func(id [32]byte)) error {
	return s.sh.OthersRefs(ctx, fn)
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Shared = (*Shared)(nil)
)

// New caches next's objects in dir, at most max bytes. It returns a
// *Shared when next is a store.Shared.
func New(next store.Store, dir string, max int64, log *slog.Logger) (store.Store, error) {
	if max <= 0 {
		return nil, fmt.Errorf("store/cache: a bound of %d bytes: give a positive size", max)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Store{Store: next, dir: dir, max: max, log: log}
	if err := os.RemoveAll(c.tmpDir()); err != nil {
		return nil, fmt.Errorf("store/cache: %w", err)
	}
	if err := os.MkdirAll(c.tmpDir(), 0o755); err != nil {
		return nil, fmt.Errorf("store/cache: %w", err)
	}
	for _, f := range c.files() {
		c.used += f.size
	}
	if sh, ok := next.(store.Shared); ok {
		return &Shared{Store: c, sh: sh}, nil
	}
	return c, nil
}

func (c *Store) tmpDir() string { return filepath.Join(c.dir, "tmp") }

func (c *Store) path(id string) string { return filepath.Join(c.dir, id[:2], id[2:]) }

// Open reads a cached copy, or the store behind while filling the cache.
func (c *Store) Open(ctx context.Context, id string) (io.ReadCloser, store.Info, error) {
	if !store.ValidID(id) {
		return nil, store.Info{}, store.ErrInvalidID
	}
	if f, err := os.Open(c.path(id)); err == nil {
		if fi, err := f.Stat(); err == nil {
			now := time.Now()
			os.Chtimes(c.path(id), now, now) // most recently read
			return f, store.Info{ID: id, Size: fi.Size(), Created: fi.ModTime().UTC()}, nil
		}
		f.Close()
	}
	r, info, err := c.Store.Open(ctx, id)
	if err != nil || info.Size > c.max/8 {
		return r, info, err
	}
	tmp, err := os.CreateTemp(c.tmpDir(), "fill-*")
	if err != nil {
		c.log.Warn("store/cache: not caching", "err", err)
		return r, info, nil
	}
	return &filler{c: c, id: id, size: info.Size, r: r, tmp: tmp, h: sha256.New()}, info, nil
}

// filler copies what the caller reads to a temporary file, which becomes
// the cached copy if the caller reads the object to its end.
type filler struct {
	c    *Store
	id   string
	size int64
	r    io.ReadCloser
	tmp  *os.File
	h    hash.Hash
	n    int64
	bad  bool // a write failed: keep serving, do not cache
}

func (f *filler) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && !f.bad {
		if _, werr := f.tmp.Write(p[:n]); werr != nil {
			f.bad = true
		}
		f.h.Write(p[:n])
		f.n += int64(n)
	}
	// Whole once size bytes came (a reader of exactly the size never
	// sees io.EOF); the hash says they are the object's.
	if f.tmp != nil && !f.bad && f.n == f.size && hex.EncodeToString(f.h.Sum(nil)) == f.id {
		f.c.commit(f.tmp, f.id, f.size)
		f.tmp = nil
	}
	return n, err
}

func (f *filler) Close() error {
	if f.tmp != nil {
		f.tmp.Close()
		os.Remove(f.tmp.Name())
		f.tmp = nil
	}
	return f.r.Close()
}

// commit renames a whole, verified temporary file into place and evicts
// the least recently read files past the bound.
func (c *Store) commit(tmp *os.File, id string, size int64) {
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Close(); err != nil {
		return
	}
	dst := c.path(id)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := os.Stat(dst); err == nil {
		return // another reader cached it first
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return
	}
	c.used += size
	if c.used > c.max {
		c.evictLocked()
	}
}

type cached struct {
	id   string
	size int64
	at   time.Time
}

// files lists the cached copies.
func (c *Store) files() []cached {
	var out []cached
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && p == c.tmpDir() {
				return filepath.SkipDir
			}
			return nil
		}
		id := filepath.Base(filepath.Dir(p)) + d.Name()
		if fi, err := d.Info(); err == nil && store.ValidID(id) {
			out = append(out, cached{id: id, size: fi.Size(), at: fi.ModTime()})
		}
		return nil
	})
	return out
}

// evictLocked removes the least recently read copies until the cache
// holds at most nine tenths of its bound. Call with mu held.
func (c *Store) evictLocked() {
	fs := c.files()
	slices.SortFunc(fs, func(a, b cached) int { return a.at.Compare(b.at) })
	for _, f := range fs {
		if c.used <= c.max/10*9 {
			return
		}
		if os.Remove(c.path(f.id)) == nil {
			c.used -= f.size
		}
	}
}

// drop removes id's cached copy.
func (c *Store) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fi, err := os.Stat(c.path(id)); err == nil && os.Remove(c.path(id)) == nil {
		c.used -= fi.Size()
	}
}

// Remove removes the object and its cached copy.
func (c *Store) Remove(ctx context.Context, id string) error {
	err := c.Store.Remove(ctx, id)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		c.drop(id)
	}
	return err
}

// RemoveIfOlder removes the object, and its cached copy, if old.
func (c *Store) RemoveIfOlder(ctx context.Context, id string, cutoff time.Time) (bool, error) {
	ok, err := c.Store.RemoveIfOlder(ctx, id, cutoff)
	if ok {
		c.drop(id)
	}
	return ok, err
}

// Used reports how many bytes the cache holds.
func (c *Store) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

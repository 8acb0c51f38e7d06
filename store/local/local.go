// Package local is braid's object store in a directory on local disk (the
// default store): the store.Store contract, with a file per object.
//
// Every write goes the same way, for Put and PutBytes alike: the bytes go
// to a temporary file (hashed on the way), the file is fsynced, renamed into
// place, and the fan-out directory that now names it is fsynced (and its
// parent, when the fan-out directory was created). So a reader never sees a
// partial object, a crash never leaves one behind under a real id, and once
// Put returns the object survives a power cut.
//
// Layout: DIR/objects/ab/cdef... (first two hex digits as a fan-out folder),
// DIR/tmp/ for uploads in progress (emptied at Open).
//
// The lease (store's Collection) is the file's modification time. Refreshes
// and removals of one id take the same per-fan-out-directory lock, which
// orders them as the contract asks. The context arguments are honoured
// between reads of a Put's body; file system calls do not block on them.
package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/store"
)

// Info is store.Info.
type Info = store.Info

var _ store.Store = (*Store)(nil)

// Store is a store.Store in a directory.
type Store struct {
	dir string
	cfg store.Config
	// stripes[b] serialises committing, touching and removing the objects
	// whose id starts with byte b's two hex digits (one fan-out directory).
	// Only one is held at a time.
	stripes [256]stripe
	// objects and bytes count what is stored (Usage): counted once by
	// Open, then kept up to date by commit and the removals.
	objects, bytes atomic.Int64
}

// stripe is one fan-out directory's lock and what it guards.
type stripe struct {
	sync.Mutex
	// touched holds when this store last refreshed an object (Unix ns),
	// for TouchEvery; it is emptied when it reaches maxTouched entries.
	touched map[string]int64
}

const maxTouched = 128

// syncDir fsyncs a directory, making the entries created or renamed in it
// durable. It is a variable so that a unit test can watch the calls.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Open opens (creating if needed) a store under dir.
func Open(dir string, cfg store.Config) (*Store, error) {
	s := &Store{dir: dir, cfg: cfg.WithDefaults()}
	if err := os.RemoveAll(s.tmpDir()); err != nil {
		return nil, fmt.Errorf("store: clear tmp: %w", err)
	}
	for _, d := range []string{s.tmpDir(), s.objectsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("store: sync %s: %w", dir, err)
	}
	objs, err := s.List(context.Background())
	if err != nil {
		return nil, fmt.Errorf("store: counting objects: %w", err)
	}
	for _, o := range objs {
		s.counted(1, o.Size)
	}
	return s, nil
}

// Usage reports how many objects the store holds and their total size in
// bytes. Objects removed from the directory by hand are counted until the
// store is opened again.
func (s *Store) Usage() (objects, bytes int64) {
	return s.objects.Load(), s.bytes.Load()
}

// counted adds n objects of size bytes in all (negative: removed).
func (s *Store) counted(n, size int64) {
	s.objects.Add(n)
	s.bytes.Add(size)
}

// MaxSize is the largest object Put accepts.
func (s *Store) MaxSize() int64 { return s.cfg.MaxSize }

func (s *Store) tmpDir() string { return filepath.Join(s.dir, "tmp") }

func (s *Store) objectsDir() string { return filepath.Join(s.dir, "objects") }

func (s *Store) path(id string) string {
	return filepath.Join(s.objectsDir(), id[:2], id[2:])
}

// lock takes the lock of id's fan-out directory; the caller unlocks it.
func (s *Store) lock(id string) *stripe {
	b, _ := hex.DecodeString(id[:2])
	st := &s.stripes[b[0]]
	st.Lock()
	return st
}

// Put stores everything r yields and returns the object's info (Existing
// if the bytes were already stored). It reads at most MaxSize+1 bytes and
// fails with ErrTooLarge past MaxSize, leaving no trace.
func (s *Store) Put(ctx context.Context, r io.Reader) (Info, error) {
	f, err := os.CreateTemp(s.tmpDir(), "put-*")
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name()) // no-op after a successful rename
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(ctxReader{ctx, r}, s.cfg.MaxSize+1))
	if err != nil {
		return Info{}, fmt.Errorf("store: write object: %w", err)
	}
	if n > s.cfg.MaxSize {
		return Info{}, fmt.Errorf("%w: more than %d bytes", store.ErrTooLarge, s.cfg.MaxSize)
	}
	if err := f.Sync(); err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	return s.commit(f.Name(), hex.EncodeToString(h.Sum(nil)), n)
}

// PutBytes stores p. When the object already exists it only hashes and
// refreshes the object's modification time (see Collection).
func (s *Store) PutBytes(_ context.Context, p []byte) (Info, error) {
	if int64(len(p)) > s.cfg.MaxSize {
		return Info{}, fmt.Errorf("%w: %d bytes, limit %d", store.ErrTooLarge, len(p), s.cfg.MaxSize)
	}
	sum := sha256.Sum256(p)
	id := hex.EncodeToString(sum[:])
	st := s.lock(id)
	created, err := s.refreshLocked(st, id)
	st.Unlock()
	if err == nil {
		return Info{ID: id, Size: int64(len(p)), Created: created, Existing: true}, nil
	}
	f, err := os.CreateTemp(s.tmpDir(), "put-*")
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	if _, err := f.Write(p); err != nil {
		return Info{}, fmt.Errorf("store: write object: %w", err)
	}
	if err := f.Sync(); err != nil { // a crash must not leave a short file under a real id
		return Info{}, fmt.Errorf("store: %w", err)
	}
	return s.commit(f.Name(), id, int64(len(p)))
}

// commit moves a synced temporary file into place as object id and makes
// the rename durable; if the object exists it is refreshed instead.
func (s *Store) commit(tmp, id string, size int64) (Info, error) {
	st := s.lock(id)
	defer st.Unlock()
	if created, err := s.refreshLocked(st, id); err == nil {
		return Info{ID: id, Size: size, Created: created, Existing: true}, nil
	}
	dst := s.path(id)
	fanout := filepath.Dir(dst)
	if err := s.makeFanout(fanout); err != nil {
		return Info{}, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	if err := syncDir(fanout); err != nil {
		return Info{}, fmt.Errorf("store: sync %s: %w", fanout, err)
	}
	now := time.Now()
	st.remember(id, now)
	s.counted(1, size)
	return Info{ID: id, Size: size, Created: now.UTC()}, nil
}

// makeFanout creates a fan-out directory if needed, syncing its parent
// when it does so that the new directory's name is durable too.
func (s *Store) makeFanout(fanout string) error {
	err := os.Mkdir(fanout, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if err := syncDir(s.objectsDir()); err != nil {
		return fmt.Errorf("store: sync %s: %w", s.objectsDir(), err)
	}
	return nil
}

// Touch refreshes an object's modification time, so that a collector
// running RemoveIfOlder with an earlier cutoff keeps it, and returns its
// info. Call it before recording a new reference to an object the caller
// did not just store. It fails with ErrNotFound if the object is gone.
func (s *Store) Touch(ctx context.Context, id string) (Info, error) {
	if !store.ValidID(id) {
		return Info{}, store.ErrInvalidID
	}
	st := s.lock(id)
	defer st.Unlock()
	created, err := s.refreshLocked(st, id)
	if err != nil {
		return Info{}, err
	}
	info, err := s.Stat(ctx, id)
	info.Created = created
	return info, err
}

// refreshLocked moves an existing object's modification time to now,
// unless this store did so less than TouchEvery ago, and returns the time
// the object now has; ErrNotFound if there is no such object.
func (s *Store) refreshLocked(st *stripe, id string) (time.Time, error) {
	now := time.Now()
	if at, ok := st.touched[id]; ok && now.UnixNano()-at < int64(s.cfg.TouchEvery) {
		return time.Unix(0, at).UTC(), nil
	}
	err := os.Chtimes(s.path(id), time.Time{}, now)
	if errors.Is(err, fs.ErrNotExist) {
		delete(st.touched, id)
		return time.Time{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("store: %w", err)
	}
	st.remember(id, now)
	return now.UTC(), nil
}

// remember records that id's modification time is now at.
func (st *stripe) remember(id string, at time.Time) {
	if st.touched == nil || len(st.touched) >= maxTouched {
		st.touched = make(map[string]int64, 16)
	}
	st.touched[id] = at.UnixNano()
}

// Remove deletes an object. It fails with ErrNotFound if there is none.
func (s *Store) Remove(_ context.Context, id string) error {
	if !store.ValidID(id) {
		return store.ErrInvalidID
	}
	st := s.lock(id)
	defer st.Unlock()
	delete(st.touched, id)
	fi, err := os.Stat(s.path(id))
	if err == nil {
		err = os.Remove(s.path(id))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	s.counted(-1, -fi.Size())
	return nil
}

// RemoveIfOlder deletes an object only if it was last stored or touched
// before cutoff, and reports whether it did. A missing object is not an
// error. See Collection for why this is safe against concurrent writers.
func (s *Store) RemoveIfOlder(_ context.Context, id string, cutoff time.Time) (bool, error) {
	if !store.ValidID(id) {
		return false, store.ErrInvalidID
	}
	st := s.lock(id)
	defer st.Unlock()
	fi, err := os.Stat(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	if !fi.ModTime().Before(cutoff) {
		return false, nil
	}
	delete(st.touched, id)
	err = os.Remove(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %w", err)
	}
	s.counted(-1, -fi.Size())
	return true, nil
}

// Stat returns an object's info.
func (s *Store) Stat(_ context.Context, id string) (Info, error) {
	if !store.ValidID(id) {
		return Info{}, store.ErrInvalidID
	}
	fi, err := os.Stat(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	return Info{ID: id, Size: fi.Size(), Created: fi.ModTime().UTC()}, nil
}

// Open returns a reader of an object and its info; the caller closes it.
func (s *Store) Open(_ context.Context, id string) (io.ReadCloser, Info, error) {
	if !store.ValidID(id) {
		return nil, Info{}, store.ErrInvalidID
	}
	f, err := os.Open(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("%w: %s", store.ErrNotFound, id)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("store: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, Info{}, fmt.Errorf("store: %w", err)
	}
	return f, Info{ID: id, Size: fi.Size(), Created: fi.ModTime().UTC()}, nil
}

// Close does nothing: a directory holds nothing open.
func (s *Store) Close() error { return nil }

// ctxReader fails reads once ctx has ended, so that a Put whose caller
// gave up stops at the next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// List returns every object, sorted by id.
func (s *Store) List(_ context.Context) ([]Info, error) {
	var out []Info
	root := s.objectsDir()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		id := strings.ReplaceAll(rel, string(filepath.Separator), "")
		if !store.ValidID(id) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		out = append(out, Info{ID: id, Size: fi.Size(), Created: fi.ModTime().UTC()})
		return nil
	})
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

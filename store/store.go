// Package store is braid's content-addressed object store on local disk.
//
// An object's id is the lowercase hex sha256 of its bytes. Objects are
// immutable: Put streams the body to a temporary file while hashing it, then
// renames it into place, so a reader never sees a partial object and a crash
// never leaves one behind under a real id. Storing the same bytes twice costs
// one hash and no second copy.
//
// Layout: DIR/objects/ab/cdef... (first two hex digits as a fan-out folder),
// DIR/tmp/ for uploads in progress (emptied at Open).
package store

import (
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
	"time"
)

// Errors returned by the store.
var (
	ErrNotFound  = errors.New("store: no such object")
	ErrTooLarge  = errors.New("store: object too large")
	ErrInvalidID = errors.New("store: invalid object id (want 64 lowercase hex digits)")
)

// Info describes a stored object.
type Info struct {
	ID      string    `json:"id"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
}

// Store is safe for concurrent use.
type Store struct {
	dir     string
	maxSize int64
}

// DefaultMaxSize is the default limit on one object's size.
const DefaultMaxSize = 1 << 30

// Open opens (creating if needed) a store under dir. maxSize <= 0 means
// DefaultMaxSize.
func Open(dir string, maxSize int64) (*Store, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	s := &Store{dir: dir, maxSize: maxSize}
	if err := os.RemoveAll(s.tmpDir()); err != nil {
		return nil, fmt.Errorf("store: clear tmp: %w", err)
	}
	for _, d := range []string{s.tmpDir(), filepath.Join(dir, "objects")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	return s, nil
}

// MaxSize is the largest object Put accepts.
func (s *Store) MaxSize() int64 { return s.maxSize }

func (s *Store) tmpDir() string { return filepath.Join(s.dir, "tmp") }

func (s *Store) path(id string) string {
	return filepath.Join(s.dir, "objects", id[:2], id[2:])
}

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

// Put stores everything r yields and returns the object's info. It reads at
// most MaxSize+1 bytes and fails with ErrTooLarge past MaxSize, leaving no
// trace.
func (s *Store) Put(r io.Reader) (Info, error) {
	f, err := os.CreateTemp(s.tmpDir(), "put-*")
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name()) // no-op after a successful rename
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, s.maxSize+1))
	if err != nil {
		return Info{}, fmt.Errorf("store: write object: %w", err)
	}
	if n > s.maxSize {
		return Info{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, s.maxSize)
	}
	if err := f.Sync(); err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	return s.commit(f.Name(), hex.EncodeToString(h.Sum(nil)), n)
}

// PutBytes stores p. When the object already exists it only hashes.
func (s *Store) PutBytes(p []byte) (Info, error) {
	if int64(len(p)) > s.maxSize {
		return Info{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(p), s.maxSize)
	}
	sum := sha256.Sum256(p)
	id := hex.EncodeToString(sum[:])
	if info, err := s.Stat(id); err == nil {
		return info, nil
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

func (s *Store) commit(tmp, id string, size int64) (Info, error) {
	dst := s.path(id)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	return Info{ID: id, Size: size, Created: time.Now().UTC()}, nil
}

// Stat returns an object's info.
func (s *Store) Stat(id string) (Info, error) {
	if !ValidID(id) {
		return Info{}, ErrInvalidID
	}
	fi, err := os.Stat(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Info{}, fmt.Errorf("store: %w", err)
	}
	return Info{ID: id, Size: fi.Size(), Created: fi.ModTime().UTC()}, nil
}

// Open returns a reader for an object; the caller closes it.
func (s *Store) Open(id string) (*os.File, error) {
	if !ValidID(id) {
		return nil, ErrInvalidID
	}
	f, err := os.Open(s.path(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return f, err
}

// ReadAll returns a whole object, refusing objects over limit bytes.
func (s *Store) ReadAll(id string, limit int64) ([]byte, error) {
	f, err := s.Open(id)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%w: object %s has %d bytes, limit here is %d", ErrTooLarge, id, fi.Size(), limit)
	}
	return io.ReadAll(f)
}

// List returns every object, sorted by id.
func (s *Store) List() ([]Info, error) {
	var out []Info
	root := filepath.Join(s.dir, "objects")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		id := strings.ReplaceAll(rel, string(filepath.Separator), "")
		if !ValidID(id) {
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

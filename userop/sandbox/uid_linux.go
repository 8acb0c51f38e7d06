package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// uids hands out user ids from a range, one unit at a time each, across
// every process on the host: an id is held by an exclusive flock on a
// file named after it, which the kernel drops if the holder dies (as
// systemd's DynamicUser does in /run/systemd/dynamic-uid).
type uids struct {
	dir      string
	first, n uint32

	mu   sync.Mutex // guards next
	next uint32     // the offset the next search starts at
}

// lease is a user id held until release.
type lease struct {
	uid  uint32
	lock *os.File
}

func newUIDs(dir string, first, n uint32) (*uids, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: lock directory: %w", err)
	}
	return &uids{dir: dir, first: first, n: n}, nil
}

// errNoUID says every id of the range is in use.
var errNoUID = errors.New("sandbox: every user id of the range is in use")

// acquire takes a free id, starting after the last one handed out so that
// an id just released is not reused at once.
func (u *uids) acquire() (*lease, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := range u.n {
		off := (u.next + i) % u.n
		l, err := u.try(u.first + off)
		if err != nil {
			return nil, err
		}
		if l != nil {
			u.next = off + 1
			return l, nil
		}
	}
	return nil, errNoUID
}

// try locks uid's file, or returns nil if another holds it.
func (u *uids) try(uid uint32) (*lease, error) {
	f, err := os.OpenFile(filepath.Join(u.dir, strconv.FormatUint(uint64(uid), 10)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock file: %w", err)
	}
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		f.Close()
		return nil, nil
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("sandbox: lock user id %d: %w", uid, err)
	}
	return &lease{uid: uid, lock: f}, nil
}

// release gives the id back.
func (l *lease) release() { l.lock.Close() }

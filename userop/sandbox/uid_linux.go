package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// uids hands out user ids from a range, one unit at a time each, across
// every process on the host: an id is held by an exclusive flock on a
// file named after it, which the kernel drops if the holder dies (as
// systemd's DynamicUser does in /run/systemd/dynamic-uid).
type uids struct {
	dir      string
	first, n uint32
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

// acquire takes the lowest free id, so that the lock files are no more
// than the units ever run at once. An id is free again as soon as its
// unit has ended: nothing of the unit is left to find (its processes,
// files, IPC objects and network are gone with its namespaces, and the
// keyring is out of its reach).
func (u *uids) acquire() (*lease, error) {
	for uid := u.first; uid-u.first < u.n; uid++ {
		l, err := u.try(uid)
		if l != nil || err != nil {
			return l, err
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

package client

import (
	"errors"
	"io"
	"sync/atomic"
)

// upload is a streamed request body (Put's). It can be sent again if no
// byte of it has been read yet, or if its reader can seek back to where the
// call found it.
type upload struct {
	r     io.Reader
	start int64 // r's offset when the call began; -1 if r cannot seek
	size  int64 // bytes from start to r's end; -1 if unknown
	read  atomic.Int64
}

var errNotReplayable = errors.New("braid client: the upload body cannot be read again")

// newUpload wraps r. A reader that is an io.Seeker but fails to seek (a
// pipe behind an *os.File) counts as one that cannot.
func newUpload(r io.Reader) *upload {
	u := &upload{r: r, start: -1, size: -1}
	s, ok := r.(io.Seeker)
	if !ok {
		return u
	}
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return u
	}
	end, err := s.Seek(0, io.SeekEnd)
	if _, err2 := s.Seek(start, io.SeekStart); err2 != nil {
		return u
	}
	u.start = start
	if err == nil {
		u.size = end - start
	}
	return u
}

func (u *upload) replayable() bool { return u.read.Load() == 0 || u.start >= 0 }

// open rewinds the body if an attempt read some of it. It returns u itself,
// which has no Close method, so that the transport, which closes request
// bodies, never closes the caller's reader.
func (u *upload) open() (io.Reader, int64, error) {
	if u.read.Load() > 0 {
		if u.start < 0 {
			return nil, 0, errNotReplayable
		}
		if _, err := u.r.(io.Seeker).Seek(u.start, io.SeekStart); err != nil {
			return nil, 0, err
		}
		u.read.Store(0)
	}
	return u, u.size, nil
}

func (u *upload) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	u.read.Add(int64(n))
	return n, err
}

package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
)

// reader walks a message; the first short read sets err and every later
// call returns zero values, so parse functions check err once at the end.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("%w: truncated (need %d more bytes, have %d)", ErrMalformed, n, len(r.b))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) header(m0, m1 byte) {
	p := r.take(3)
	if r.err != nil {
		return
	}
	if p[0] != m0 || p[1] != m1 {
		r.err = fmt.Errorf("%w: bad magic %q, want %q", ErrMalformed, p[:2], []byte{m0, m1})
	} else if p[2] != version {
		r.err = fmt.Errorf("%w: version %d, this build speaks %d", ErrMalformed, p[2], version)
	}
}

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (r *reader) duration() time.Duration {
	v := r.u64()
	if v > math.MaxInt64 {
		r.err = fmt.Errorf("%w: duration out of range", ErrMalformed)
		return 0
	}
	return time.Duration(v)
}

func (r *reader) bytes(n int) []byte { return r.take(n) }
func (r *reader) str8() string       { return string(r.take(int(r.u8()))) }
func (r *reader) str16() string      { return string(r.take(int(r.u16()))) }

func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	p := r.b
	r.b = nil
	return p
}

func appendStr8(b []byte, s string) []byte {
	return append(append(b, byte(len(s))), s...)
}

func appendStr16(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint16(b, uint16(len(s))), s...)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Package wire encodes the messages that travel on data-plane streams: a
// computation unit from server to worker, and its result back.
//
// Both are self-describing binary messages built by pure append functions and
// read by parse functions that never panic on hostile input (they are
// fuzzed). Parse functions return slices that alias the message: the caller
// owns the message, so it owns them too.
//
//	unit   = "BU" ver=1 | id u64 | job str8 | index u32 | attempt u16 |
//	         op str8 | digest [32] | nparams u16 {key str8, value str16} |
//	         input bytes (the rest)
//	result = "BR" ver=1 | id u64 | status u8 | err str16 | queued ns u64 |
//	         compute ns u64 | queue depth u32 | rate mHz u32 | output (the rest)
//
// str8 and str16 are strings prefixed by a uint8 or uint16 length. Every
// result carries the worker's queue depth and service rate: the receiver
// feedback of seed 003 (docs/seeds.md) rides on the data it describes.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("wire: malformed message")

const version = 1

// Limits on the self-describing parts of a unit.
const (
	MaxParams     = 64
	MaxErrorText  = 4096
	maxShortField = math.MaxUint8
)

// Unit is one computation unit as it travels to a worker.
type Unit struct {
	ID      uint64 // unique per server; the result names it
	Job     string
	Index   int
	Attempt int
	Op      string
	Digest  [32]byte // code digest of Op; zero for built-in operations
	Params  map[string]string
	Input   []byte
}

// Status of a result.
type Status uint8

// Result statuses.
const (
	StatusOK     Status = 0 // Output holds the unit's output
	StatusFailed Status = 1 // the operation failed on this input; Error says why
	// StatusRefused: the worker cannot run the unit (it does not have the
	// operation); the server takes the unit off that worker.
	StatusRefused Status = 2
	// StatusReturned: the worker hands the unit back unrun (it is shutting
	// down); the server places it again, elsewhere. Not a failure.
	StatusReturned Status = 3
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusFailed:
		return "failed"
	case StatusRefused:
		return "refused"
	case StatusReturned:
		return "returned"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// Result is a unit's outcome as it travels back to the server.
type Result struct {
	ID      uint64
	Status  Status
	Error   string
	Queued  time.Duration // time the unit waited in the worker's queue
	Compute time.Duration // time the operation ran
	// QueueDepth and Rate are the worker's feedback: units waiting in this
	// association's queue, and measured service rate in units per second.
	QueueDepth int
	Rate       float64
	Output     []byte
}

// AppendUnit appends the encoding of u to b. It fails if a field does not
// fit its length prefix.
func AppendUnit(b []byte, u *Unit) ([]byte, error) {
	if len(u.Job) > maxShortField || len(u.Op) > maxShortField {
		return b, fmt.Errorf("wire: job or op name over %d bytes", maxShortField)
	}
	if len(u.Params) > MaxParams {
		return b, fmt.Errorf("wire: %d params, at most %d", len(u.Params), MaxParams)
	}
	if u.Index < 0 || u.Index > math.MaxUint32 || u.Attempt < 0 || u.Attempt > math.MaxUint16 {
		return b, fmt.Errorf("wire: unit index %d or attempt %d out of range", u.Index, u.Attempt)
	}
	b = append(b, 'B', 'U', version)
	b = binary.BigEndian.AppendUint64(b, u.ID)
	b = appendStr8(b, u.Job)
	b = binary.BigEndian.AppendUint32(b, uint32(u.Index))
	b = binary.BigEndian.AppendUint16(b, uint16(u.Attempt))
	b = appendStr8(b, u.Op)
	b = append(b, u.Digest[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(u.Params)))
	for _, k := range sortedKeys(u.Params) {
		v := u.Params[k]
		if len(k) > maxShortField || len(v) > math.MaxUint16 {
			return b, fmt.Errorf("wire: param %.20q too long", k)
		}
		b = appendStr8(b, k)
		b = appendStr16(b, v)
	}
	return append(b, u.Input...), nil
}

// ParseUnit decodes a unit. u.Input aliases p.
func ParseUnit(p []byte) (Unit, error) {
	var u Unit
	r := reader{b: p}
	r.header('B', 'U')
	u.ID = r.u64()
	u.Job = r.str8()
	u.Index = int(r.u32())
	u.Attempt = int(r.u16())
	u.Op = r.str8()
	copy(u.Digest[:], r.bytes(32))
	n := int(r.u16())
	if n > MaxParams {
		return u, fmt.Errorf("%w: %d params, at most %d", ErrMalformed, n, MaxParams)
	}
	if n > 0 && r.err == nil {
		u.Params = make(map[string]string, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		k := r.str8()
		u.Params[k] = r.str16()
	}
	u.Input = r.rest()
	return u, r.err
}

// AppendResult appends the encoding of res to b. Error text is cut to
// MaxErrorText bytes.
func AppendResult(b []byte, res *Result) []byte {
	b = append(b, 'B', 'R', version)
	b = binary.BigEndian.AppendUint64(b, res.ID)
	b = append(b, byte(res.Status))
	msg := res.Error
	if len(msg) > MaxErrorText {
		msg = msg[:MaxErrorText]
	}
	b = appendStr16(b, msg)
	b = binary.BigEndian.AppendUint64(b, uint64(max(res.Queued, 0)))
	b = binary.BigEndian.AppendUint64(b, uint64(max(res.Compute, 0)))
	b = binary.BigEndian.AppendUint32(b, uint32(min(max(res.QueueDepth, 0), math.MaxUint32)))
	b = binary.BigEndian.AppendUint32(b, uint32(min(max(res.Rate*1000, 0), math.MaxUint32)))
	return append(b, res.Output...)
}

// ParseResult decodes a result. res.Output aliases p.
func ParseResult(p []byte) (Result, error) {
	var res Result
	r := reader{b: p}
	r.header('B', 'R')
	res.ID = r.u64()
	res.Status = Status(r.u8())
	res.Error = r.str16()
	res.Queued = r.duration()
	res.Compute = r.duration()
	res.QueueDepth = int(r.u32())
	res.Rate = float64(r.u32()) / 1000
	res.Output = r.rest()
	if r.err == nil && res.Status > StatusReturned {
		return res, fmt.Errorf("%w: unknown result status %d", ErrMalformed, res.Status)
	}
	return res, r.err
}

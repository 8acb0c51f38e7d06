package statedb

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/braidhq/braid/api"
)

// Unit states as Unit stores them.
const (
	UnitPending uint8 = iota
	UnitRunning
	UnitDone
	UnitFailed
)

var unitStateNames = [...]string{"pending", "running", "done", "failed"}

// Unit is one unit's statistics, as PutUnit records them and the reads
// return them; api.UnitStat is built from it only when a client asks.
type Unit struct {
	Sent, Returned  int64 // Unix nanoseconds; 0: not yet
	Queued, Compute int64 // the worker's own timings, nanoseconds
	Output          [32]byte
	Stream          uint16
	Attempts        uint16 // saturates
	State           uint8
}

// Stat is unit i's api.UnitStat, run by the named worker; errText is a
// failed unit's error.
func (u *Unit) Stat(i int, worker, errText string) api.UnitStat {
	s := api.UnitStat{Index: i, State: unitStateNames[min(int(u.State), len(unitStateNames)-1)],
		Worker: worker, Stream: int(u.Stream), Attempts: int(u.Attempts), Error: errText,
		QueuedMS:  float64(u.Queued) / float64(time.Millisecond),
		ComputeMS: float64(u.Compute) / float64(time.Millisecond)}
	if u.Sent != 0 {
		t := time.Unix(0, u.Sent)
		s.Sent = &t
	}
	if u.Returned != 0 {
		t := time.Unix(0, u.Returned)
		s.Returned = &t
	}
	if u.HasOutput() {
		s.Output = HexID(u.Output)
	}
	return s
}

// HasOutput reports whether the unit has an output object.
func (u *Unit) HasOutput() bool { return u.Output != [32]byte{} }

// unitKey is a unit record's key in the units bucket: job id, "/", index.
func unitKey(job string, i int) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(job), '/'), uint32(i))
}

// unitPrefix is the key prefix of all of a job's unit records.
func unitPrefix(job string) []byte { return append([]byte(job), '/') }

// unitRecVersion is the first byte of every encoded unit record.
const unitRecVersion = 1

// encode appends the record, its worker's name and its error text:
//
//	ver u8 | state u8 | attempts u16 | stream u16 | sent i64 | returned i64 |
//	queued i64 | compute i64 | output [32] | worker str8 | error str16
func (u *Unit) encode(b []byte, worker, errText string) []byte {
	b = append(b, unitRecVersion, u.State)
	b = binary.BigEndian.AppendUint16(b, u.Attempts)
	b = binary.BigEndian.AppendUint16(b, u.Stream)
	for _, v := range [...]int64{u.Sent, u.Returned, u.Queued, u.Compute} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	b = append(b, u.Output[:]...)
	worker = worker[:min(len(worker), math.MaxUint8)]
	b = append(b, byte(len(worker)))
	b = append(b, worker...)
	errText = errText[:min(len(errText), math.MaxUint16)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(errText)))
	return append(b, errText...)
}

// errBadUnitRec reports a unit record that cannot be decoded.
var errBadUnitRec = errors.New("statedb: bad unit record")

const unitRecFixed = 1 + 1 + 2 + 2 + 4*8 + 32

// decodeUnitRec reads a record written by encode.
func decodeUnitRec(b []byte) (u Unit, worker, errText string, err error) {
	if len(b) < unitRecFixed+1 || b[0] != unitRecVersion {
		return u, "", "", fmt.Errorf("%w (%d bytes)", errBadUnitRec, len(b))
	}
	u.State = b[1]
	u.Attempts = binary.BigEndian.Uint16(b[2:])
	u.Stream = binary.BigEndian.Uint16(b[4:])
	p := b[6:]
	for _, v := range [...]*int64{&u.Sent, &u.Returned, &u.Queued, &u.Compute} {
		*v = int64(binary.BigEndian.Uint64(p))
		p = p[8:]
	}
	copy(u.Output[:], p)
	p = p[32:]
	n := int(p[0])
	if len(p) < 1+n+2 {
		return u, "", "", errBadUnitRec
	}
	worker, p = string(p[1:1+n]), p[1+n:]
	m := int(binary.BigEndian.Uint16(p))
	if len(p) != 2+m {
		return u, "", "", errBadUnitRec
	}
	return u, worker, string(p[2:]), nil
}

// HexID is an object id's text form.
func HexID(b [32]byte) string { return hex.EncodeToString(b[:]) }

// ParseID turns an object id into its 32 bytes; "" (or anything but 64
// hex digits) gives zero.
func ParseID(id string) [32]byte {
	var out [32]byte
	if len(id) == 64 {
		_, _ = hex.Decode(out[:], []byte(id))
	}
	return out
}

package server

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/braidhq/braid/api"
)

// Unit states as unitRec stores them.
const (
	unitPending uint8 = iota
	unitRunning
	unitDone
	unitFailed
)

var unitStateNames = [...]string{"pending", "running", "done", "failed"}

// unitRec is one unit's statistics, compact: a 100,000-unit job holds
// 100,000 of these (72 bytes each) while it runs, and api.UnitStat is built
// from them only when a client asks.
type unitRec struct {
	sent, returned  int64 // Unix nanoseconds; 0: not yet
	queued, compute int64 // the worker's own timings, nanoseconds
	output          [32]byte
	worker          uint16 // 1 + index in unitTable.workers; 0: none
	stream          uint16
	attempts        uint16 // saturates
	state           uint8
}

// unitTable holds a job's unit records with the worker names interned.
type unitTable struct {
	recs    []unitRec
	workers []string
	byName  map[string]uint16
	errs    map[int]string // failed units' error text
}

func newUnitTable(n int) *unitTable {
	return &unitTable{recs: make([]unitRec, n), byName: map[string]uint16{}}
}

// intern returns name's worker number, adding it if new. Past 65,535
// names (never in practice) units are credited to no worker.
func (t *unitTable) intern(name string) uint16 {
	if k, ok := t.byName[name]; ok {
		return k
	}
	if len(t.workers) == math.MaxUint16 {
		return 0
	}
	t.workers = append(t.workers, name)
	k := uint16(len(t.workers))
	t.byName[name] = k
	return k
}

func (t *unitTable) workerName(k uint16) string {
	if k == 0 || int(k) > len(t.workers) {
		return ""
	}
	return t.workers[k-1]
}

func (t *unitTable) setError(i int, text string) {
	if t.errs == nil {
		t.errs = map[int]string{}
	}
	t.errs[i] = text
}

// stat builds unit i's api.UnitStat.
func (t *unitTable) stat(i int) api.UnitStat {
	return t.recs[i].stat(i, t.workerName(t.recs[i].worker), t.errs[i])
}

func (u *unitRec) stat(i int, worker, errText string) api.UnitStat {
	s := api.UnitStat{Index: i, State: unitStateNames[min(int(u.state), len(unitStateNames)-1)],
		Worker: worker, Stream: int(u.stream), Attempts: int(u.attempts), Error: errText,
		QueuedMS:  float64(u.queued) / float64(time.Millisecond),
		ComputeMS: float64(u.compute) / float64(time.Millisecond)}
	if u.sent != 0 {
		t := time.Unix(0, u.sent)
		s.Sent = &t
	}
	if u.returned != 0 {
		t := time.Unix(0, u.returned)
		s.Returned = &t
	}
	if u.hasOutput() {
		s.Output = hexID(u.output)
	}
	return s
}

func (u *unitRec) hasOutput() bool { return u.output != [32]byte{} }

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
func (u *unitRec) encode(b []byte, worker, errText string) []byte {
	b = append(b, unitRecVersion, u.state)
	b = binary.BigEndian.AppendUint16(b, u.attempts)
	b = binary.BigEndian.AppendUint16(b, u.stream)
	for _, v := range [...]int64{u.sent, u.returned, u.queued, u.compute} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	b = append(b, u.output[:]...)
	worker = worker[:min(len(worker), math.MaxUint8)]
	b = append(b, byte(len(worker)))
	b = append(b, worker...)
	errText = errText[:min(len(errText), math.MaxUint16)]
	b = binary.BigEndian.AppendUint16(b, uint16(len(errText)))
	return append(b, errText...)
}

// errBadUnitRec reports a unit record that cannot be decoded.
var errBadUnitRec = errors.New("server: bad unit record")

const unitRecFixed = 1 + 1 + 2 + 2 + 4*8 + 32

// decodeUnitRec reads a record written by encode.
func decodeUnitRec(b []byte) (u unitRec, worker, errText string, err error) {
	if len(b) < unitRecFixed+1 || b[0] != unitRecVersion {
		return u, "", "", fmt.Errorf("%w (%d bytes)", errBadUnitRec, len(b))
	}
	u.state = b[1]
	u.attempts = binary.BigEndian.Uint16(b[2:])
	u.stream = binary.BigEndian.Uint16(b[4:])
	p := b[6:]
	for _, v := range [...]*int64{&u.sent, &u.returned, &u.queued, &u.compute} {
		*v = int64(binary.BigEndian.Uint64(p))
		p = p[8:]
	}
	copy(u.output[:], p)
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

// hexID is an object id's text form.
func hexID(b [32]byte) string { return hex.EncodeToString(b[:]) }

// parseOutput turns an object id into its 32 bytes; "" gives zero.
func parseOutput(id string) [32]byte {
	var out [32]byte
	if len(id) == 64 {
		_, _ = hex.Decode(out[:], []byte(id))
	}
	return out
}

package statedb

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// The unit log (bucket unitlog, schema 3) holds a job's unit records
// compactly: units are grouped by chunk of chunkUnits indexes, and each
// commit appends to a chunk's value one segment with the records of the
// units of that chunk it accepted. Keys start with the job id and a zero
// byte:
//
//	job 0 'c' chunk (uint32) → segments (below)
//	job 0 'w' id (uint32)    → the name of the job's worker number id (from 1)
//	job 0 'e' index (uint32) → the error text of failed unit index
//
//	segment = len uvarint | nout uvarint | nout × output [32] |
//	          base varint (Unix ns) | n uvarint | n × unit
//	unit    = offset in chunk uvarint | state u8 | attempts uvarint |
//	          worker uvarint (0: none) | stream uvarint |
//	          sent−base varint | returned−sent varint | queued uvarint |
//	          compute uvarint | output uvarint (0: none, k: the k-th of
//	          the segment's outputs)
//
// A unit of a no-op job takes about 16 bytes, where schema 2's record
// with its key took 120 and, with bbolt's pages half full after appends
// in key order, some 320 on disk. Schema 2's units bucket is still read
// (jobs written before); a unit recorded twice (run again after a restart
// lost its output) reads as its last record.
const chunkUnits = 1024

const (
	keyChunk  = 'c'
	keyWorker = 'w'
	keyError  = 'e'
)

var unitLogBucket = []byte("unitlog")

// logPrefix is the prefix of every key of job's in the unit log.
func logPrefix(job string) []byte { return append([]byte(job), 0) }

func logKey(job string, kind byte, n uint32) []byte {
	return binary.BigEndian.AppendUint32(append(logPrefix(job), kind), n)
}

// txn is a write transaction of the writer's: bbolt's, plus the unit
// records its changes added, which it writes as one segment per chunk
// when the changes have been applied (flush).
type txn struct {
	*bolt.Tx
	names *nameCache
	units map[string]map[uint32][]logUnit // job → chunk → records, in the order added
}

func newTxn(tx *bolt.Tx, names *nameCache) *txn { return &txn{Tx: tx, names: names} }

// logUnit is one unit record waiting in a txn.
type logUnit struct {
	index  int
	u      Unit
	worker uint32
}

// PutUnit is the change that records unit i of job: its statistics, the
// name of the worker that ran it, and its error text if it failed.
func PutUnit(job string, i int, u Unit, worker, errText string) Change {
	return Change{apply: func(tx *txn) error {
		if i < 0 || uint64(i) > 1<<32-1 {
			return fmt.Errorf("statedb: unit index %d out of range", i)
		}
		id, err := tx.names.id(tx, job, worker)
		if err != nil {
			return err
		}
		if errText != "" {
			if err := tx.Bucket(unitLogBucket).Put(logKey(job, keyError, uint32(i)), []byte(errText)); err != nil {
				return err
			}
		}
		if tx.units == nil {
			tx.units = map[string]map[uint32][]logUnit{}
		}
		chunks := tx.units[job]
		if chunks == nil {
			chunks = map[uint32][]logUnit{}
			tx.units[job] = chunks
		}
		c := uint32(i / chunkUnits)
		chunks[c] = append(chunks[c], logUnit{index: i, u: u, worker: id})
		return nil
	}}
}

// flush appends the records the changes added to their chunks.
func (tx *txn) flush() error {
	b := tx.Bucket(unitLogBucket)
	for _, job := range slicesSortedKeys(tx.units) {
		chunks := tx.units[job]
		for _, c := range slicesSortedKeys(chunks) {
			key := logKey(job, keyChunk, c)
			old := b.Get(key)
			v := make([]byte, len(old), len(old)+32+len(chunks[c])*24)
			copy(v, old)
			if err := b.Put(key, appendSegment(v, c, chunks[c])); err != nil {
				return err
			}
		}
	}
	tx.units = nil
	return nil
}

// dropJob forgets the records a txn holds for job (it is being deleted).
func (tx *txn) dropJob(job string) {
	delete(tx.units, job)
	tx.names.forget(job)
}

func slicesSortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// appendSegment appends the segment of us, units of chunk c, to b.
func appendSegment(b []byte, c uint32, us []logUnit) []byte {
	var outs [][32]byte
	ref := map[[32]byte]int{}
	base := us[0].u.Sent
	for _, lu := range us {
		if lu.u.HasOutput() && lu.u.State == UnitDone { // a failed unit's names nothing the collector must keep
			if _, ok := ref[lu.u.Output]; !ok {
				outs = append(outs, lu.u.Output)
				ref[lu.u.Output] = len(outs)
			}
		}
		if lu.u.Sent != 0 && (base == 0 || lu.u.Sent < base) {
			base = lu.u.Sent
		}
	}
	body := binary.AppendUvarint(nil, uint64(len(outs)))
	for _, o := range outs {
		body = append(body, o[:]...)
	}
	body = binary.AppendVarint(body, base)
	body = binary.AppendUvarint(body, uint64(len(us)))
	for _, lu := range us {
		u := &lu.u
		body = binary.AppendUvarint(body, uint64(lu.index-int(c)*chunkUnits))
		body = append(body, u.State)
		body = binary.AppendUvarint(body, uint64(u.Attempts))
		body = binary.AppendUvarint(body, uint64(lu.worker))
		body = binary.AppendUvarint(body, uint64(u.Stream))
		sent := u.Sent
		if sent == 0 {
			sent = base
		}
		body = binary.AppendVarint(body, u.Sent-base)
		body = binary.AppendVarint(body, u.Returned-sent)
		body = binary.AppendUvarint(body, uint64(max(u.Queued, 0)))
		body = binary.AppendUvarint(body, uint64(max(u.Compute, 0)))
		out := 0
		if u.State == UnitDone {
			out = ref[u.Output] // 0 for none
		}
		body = binary.AppendUvarint(body, uint64(out))
	}
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
}

// errBadSegment reports a chunk value that cannot be decoded.
var errBadSegment = errors.New("statedb: bad unit log segment")

// segReader reads varints off a segment, remembering the first error.
type segReader struct {
	b   []byte
	err error
}

func (r *segReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *segReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *segReader) byte1() byte {
	if len(r.b) < 1 {
		r.fail()
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *segReader) take(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *segReader) fail() {
	if r.err == nil {
		r.err = errBadSegment
	}
	r.b = nil
}

// eachSegment calls f with the body of each segment of a chunk value.
func eachSegment(v []byte, f func(body []byte) error) error {
	r := segReader{b: v}
	for len(r.b) > 0 {
		body := r.take(r.uvarint())
		if r.err != nil {
			return r.err
		}
		if err := f(body); err != nil {
			return err
		}
	}
	return nil
}

// segmentOutputs returns the outputs a segment body names.
func segmentOutputs(body []byte) ([][32]byte, []byte, error) {
	r := segReader{b: body}
	n := r.uvarint()
	if n > uint64(len(r.b))/32 {
		return nil, nil, errBadSegment
	}
	outs := make([][32]byte, n)
	for k := range outs {
		copy(outs[k][:], r.take(32))
	}
	return outs, r.b, r.err
}

// decodeChunk decodes the records of chunk c's value, calling f with each
// unit's index, record and worker number, in the order they were written.
func decodeChunk(v []byte, c uint32, f func(i int, u Unit, worker uint32)) error {
	return eachSegment(v, func(body []byte) error {
		outs, rest, err := segmentOutputs(body)
		if err != nil {
			return err
		}
		r := segReader{b: rest}
		base := r.varint()
		n := r.uvarint()
		for k := uint64(0); k < n && r.err == nil; k++ {
			var u Unit
			off := r.uvarint()
			u.State = r.byte1()
			u.Attempts = uint16(min(r.uvarint(), 1<<16-1))
			worker := uint32(min(r.uvarint(), 1<<32-1))
			u.Stream = uint16(min(r.uvarint(), 1<<16-1))
			u.Sent = base + r.varint()
			sent := u.Sent
			if sent == 0 {
				sent = base // as appendSegment measured from
			}
			u.Returned = sent + r.varint()
			u.Queued, u.Compute = int64(r.uvarint()), int64(r.uvarint())
			if k := r.uvarint(); k > 0 && k <= uint64(len(outs)) {
				u.Output = outs[k-1]
			} else if k > uint64(len(outs)) {
				r.fail()
			}
			if off >= chunkUnits || u.State > UnitFailed {
				r.fail()
			}
			if r.err == nil {
				f(int(c)*chunkUnits+int(off), u, worker)
			}
		}
		if r.err == nil && len(r.b) != 0 {
			r.fail()
		}
		return r.err
	})
}

// nameCache is the writer's map of the worker names of the jobs it wrote
// units of lately, so that a unit record carries a number, not a name. It
// is read from the unit log the first time a job is seen, and keeps at
// most maxCachedJobs jobs. Only the writer's goroutine uses it.
type nameCache struct {
	jobs  map[string]*jobNames
	order []string // jobs by first use, the oldest first
}

type jobNames struct {
	ids  map[string]uint32
	next uint32
}

const maxCachedJobs = 64

func newNameCache() *nameCache { return &nameCache{jobs: map[string]*jobNames{}} }

// id returns name's number in job, recording a new one in tx; "" is 0.
func (c *nameCache) id(tx *txn, job, name string) (uint32, error) {
	if name == "" {
		return 0, nil
	}
	jn, err := c.load(tx, job)
	if err != nil {
		return 0, err
	}
	if id, ok := jn.ids[name]; ok {
		return id, nil
	}
	id := jn.next
	if err := tx.Bucket(unitLogBucket).Put(logKey(job, keyWorker, id), []byte(name)); err != nil {
		return 0, err
	}
	jn.ids[name], jn.next = id, id+1
	return id, nil
}

// load returns job's names, reading them from the unit log if needed.
func (c *nameCache) load(tx *txn, job string) (*jobNames, error) {
	if jn := c.jobs[job]; jn != nil {
		return jn, nil
	}
	jn := &jobNames{ids: map[string]uint32{}, next: 1}
	prefix := append(logPrefix(job), keyWorker)
	cur := tx.Bucket(unitLogBucket).Cursor()
	for k, v := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		if len(k) != len(prefix)+4 {
			return nil, fmt.Errorf("statedb: bad worker key %q", k)
		}
		id := binary.BigEndian.Uint32(k[len(prefix):])
		jn.ids[string(v)] = id
		jn.next = max(jn.next, id+1)
	}
	if len(c.order) >= maxCachedJobs {
		delete(c.jobs, c.order[0])
		c.order = c.order[1:]
	}
	c.jobs[job] = jn
	c.order = append(c.order, job)
	return jn, nil
}

// forget drops job from the cache (its records are being deleted).
func (c *nameCache) forget(job string) {
	if c.jobs[job] == nil {
		return
	}
	delete(c.jobs, job)
	c.order = slices.DeleteFunc(c.order, func(j string) bool { return j == job })
}

// UnitsRange returns the records of job's units with an index in [from,
// to), in index order, one per unit (its last).
func (s *DB) UnitsRange(job string, from, to int) ([]StoredUnit, error) {
	var out []StoredUnit
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = unitsRange(tx, job, max(from, 0), to)
		return err
	})
	return out, err
}

func unitsRange(tx *bolt.Tx, job string, from, to int) ([]StoredUnit, error) {
	if to <= from {
		return nil, nil
	}
	out, err := oldUnitsRange(tx, job, from, to)
	if err != nil {
		return nil, err
	}
	b := tx.Bucket(unitLogBucket)
	names := map[uint32]string{}
	prefix := append(logPrefix(job), keyChunk)
	cur := b.Cursor()
	for k, v := cur.Seek(logKey(job, keyChunk, uint32(from/chunkUnits))); k != nil && bytes.HasPrefix(k, prefix); k, v = cur.Next() {
		if len(k) != len(prefix)+4 {
			return nil, fmt.Errorf("statedb: bad chunk key %q", k)
		}
		c := binary.BigEndian.Uint32(k[len(prefix):])
		if int(c)*chunkUnits >= to {
			break
		}
		err := decodeChunk(v, c, func(i int, u Unit, worker uint32) {
			if i < from || i >= to {
				return
			}
			name, ok := names[worker]
			if !ok && worker != 0 {
				name = string(b.Get(logKey(job, keyWorker, worker)))
				names[worker] = name
			}
			su := StoredUnit{Index: i, Rec: u, Worker: name}
			if u.State == UnitFailed {
				su.ErrText = string(b.Get(logKey(job, keyError, uint32(i))))
			}
			out = append(out, su)
		})
		if err != nil {
			return nil, fmt.Errorf("%w (job %s, chunk %d)", err, job, c)
		}
	}
	// By index, the last record of each unit kept (the sort is stable).
	slices.SortStableFunc(out, func(a, b StoredUnit) int { return cmp.Compare(a.Index, b.Index) })
	keep := out[:0]
	for k, su := range out {
		if k+1 < len(out) && out[k+1].Index == su.Index {
			continue
		}
		keep = append(keep, su)
	}
	return keep, nil
}

// oldUnitsRange reads schema 2's records of job's units in [from, to).
func oldUnitsRange(tx *bolt.Tx, job string, from, to int) ([]StoredUnit, error) {
	var out []StoredUnit
	prefix := unitPrefix(job)
	c := tx.Bucket(unitsBucket).Cursor()
	for k, v := c.Seek(unitKey(job, from)); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if len(k) != len(prefix)+4 {
			continue
		}
		i := int(binary.BigEndian.Uint32(k[len(prefix):]))
		if i >= to {
			break
		}
		u, worker, errText, err := decodeUnitRec(v)
		if err != nil {
			return nil, fmt.Errorf("unit record %q: %w", k, err)
		}
		out = append(out, StoredUnit{Index: i, Rec: u, Worker: worker, ErrText: errText})
	}
	return out, nil
}

// EachUnit calls f with the record of every unit of job below total that
// has one, in index order, reading chunkUnits at a time; it stops at the
// first error f returns.
func (s *DB) EachUnit(job string, total int, f func(StoredUnit) error) error {
	for from := 0; from < total; from += chunkUnits {
		us, err := s.UnitsRange(job, from, min(from+chunkUnits, total))
		if err != nil {
			return err
		}
		for _, su := range us {
			if err := f(su); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteUnitLog removes every key of job's in the unit log.
func deleteUnitLog(tx *txn, job string) error {
	tx.dropJob(job)
	return deletePrefix(tx.Bucket(unitLogBucket), logPrefix(job))
}

// walkLogRefs calls ref for the outputs the unit log names, reading only
// the segments' tables of outputs.
func walkLogRefs(tx *bolt.Tx, ref func([32]byte)) error {
	return tx.Bucket(unitLogBucket).ForEach(func(k, v []byte) error {
		z := bytes.IndexByte(k, 0)
		if z < 0 || z+1 >= len(k) || k[z+1] != keyChunk {
			return nil
		}
		return eachSegment(v, func(body []byte) error {
			outs, _, err := segmentOutputs(body)
			for _, o := range outs {
				ref(o)
			}
			return err
		})
	})
}

// NamesOutput reports whether a unit record of job names output out.
func (s *DB) NamesOutput(job string, out [32]byte) (bool, error) {
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		prefix := unitPrefix(job)
		c := tx.Bucket(unitsBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && !found; k, v = c.Next() {
			found = len(v) >= unitRecOutput+32 && v[0] == unitRecVersion && v[1] == UnitDone &&
				[32]byte(v[unitRecOutput:unitRecOutput+32]) == out
		}
		prefix = append(logPrefix(job), keyChunk)
		c = tx.Bucket(unitLogBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && !found; k, v = c.Next() {
			err := eachSegment(v, func(body []byte) error {
				outs, _, err := segmentOutputs(body)
				found = found || slices.Contains(outs, out)
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return found, err
}

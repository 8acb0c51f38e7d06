// Package statedb is the braid server's embedded database (DATA/state.db,
// bbolt): job records, per-unit results, which objects clients uploaded,
// tokens, user operations and the server's identity. A restarted server
// answers for the jobs it retained and resumes the unfinished ones from
// it. Objects themselves live in package store; what references them
// lives here.
//
// Every change is a Change (PutJob, PutUnit, DeleteJob, ...) committed by
// one group-commit writer (writer.go): Queue hands it over without
// waiting, Sync waits until it is on disk. Reads (Jobs, Units, Upload,
// Tokens, Ops, DropRefs) see what has been committed. A DB is safe for
// concurrent use; Close it once, after its last change was queued.
package statedb

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// DB is the server's state database.
//
// Schema 3, one bucket each:
//
//	meta     schema → uint32; server_id → 32 hex digits; epoch → uint64
//	jobs     job id → Job (JSON), without units
//	unitlog  the records of the units whose result was accepted, by job
//	         and chunk of indexes, compactly (unitlog.go)
//	units    job id "/" index (uint32) → unit record (binary, unit.go):
//	         schema 2's records, one per unit, still read
//	uploads  object id → upload time (int64 ns), then the id of the token
//	         that uploaded it if any: objects clients uploaded, which the
//	         collector never deletes
//	tokens   token id → the server's token record (JSON)
//	operations  name, 0, version (uint32) → the server's operation
//	         record (JSON): every version of every user operation
//
// Every change goes through the group-commit writer (writer.go).
type DB struct {
	db    *bolt.DB
	w     *writer
	id    string
	epoch uint64
	// schema is the version found on disk before this start (0: none,
	// a new or pre-versioning directory); Migrate brings it to
	// SchemaVersion.
	schema uint32
}

// SchemaVersion is the layout this build reads and writes.
const SchemaVersion = 3

var (
	metaBucket    = []byte("meta")
	jobsBucket    = []byte("jobs")
	unitsBucket   = []byte("units")
	uploadsBucket = []byte("uploads")
	tokensBucket  = []byte("tokens")
	opsBucket     = []byte("operations")

	schemaKey   = []byte("schema")
	serverIDKey = []byte("server_id")
	epochKey    = []byte("epoch")
)

// Open opens state.db at path, creates what is missing, and durably takes
// a new epoch before returning, so that every start of the server has an
// epoch no earlier start had. A second Open of the same file waits 2 s for
// the first to close, then fails. log gets the writer's failures.
func Open(path string, log *slog.Logger) (*DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("statedb: open %s: %w (is another server using this --data dir?)", path, err)
	}
	s := &DB{db: db}
	if err := db.Update(s.init); err != nil {
		db.Close()
		return nil, fmt.Errorf("statedb: init: %w", err)
	}
	s.w = newWriter(db, log)
	return s, nil
}

// init creates the buckets, reads the schema version, and takes the
// server id (made on the first start) and a new epoch.
func (s *DB) init(tx *bolt.Tx) error {
	for _, name := range [][]byte{metaBucket, jobsBucket, unitsBucket, unitLogBucket, uploadsBucket, tokensBucket, opsBucket} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(metaBucket)
	if v := meta.Get(schemaKey); len(v) == 4 {
		s.schema = binary.BigEndian.Uint32(v)
	}
	if s.schema > SchemaVersion {
		return fmt.Errorf("state.db has schema %d; this build knows up to %d (a newer braid wrote it)", s.schema, SchemaVersion)
	}
	if id := meta.Get(serverIDKey); len(id) > 0 {
		s.id = string(id)
	} else {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		s.id = hex.EncodeToString(b[:])
		if err := meta.Put(serverIDKey, []byte(s.id)); err != nil {
			return err
		}
	}
	if v := meta.Get(epochKey); len(v) == 8 {
		s.epoch = binary.BigEndian.Uint64(v)
	}
	s.epoch++
	return meta.Put(epochKey, binary.BigEndian.AppendUint64(nil, s.epoch))
}

// setSchema records the layout version (within a migration's transaction).
func setSchema(tx *bolt.Tx, v uint32) error {
	return tx.Bucket(metaBucket).Put(schemaKey, binary.BigEndian.AppendUint32(nil, v))
}

// ErrClosed is what changes queued after Close get.
var ErrClosed = errors.New("statedb: closed")

// ID is the server's id, made on the first start over this database.
func (s *DB) ID() string { return s.id }

// Epoch is this start's: one more than the last start's.
func (s *DB) Epoch() uint64 { return s.epoch }

// Schema is the layout version Open found on disk (0: none recorded, a new
// database or one from before versioning); Migrate brings it to
// SchemaVersion.
func (s *DB) Schema() uint32 { return s.schema }

// Close commits what is queued and closes the database.
func (s *DB) Close() {
	s.w.close()
	s.db.Close()
}

package server

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

// stateDB is the server's embedded database (DATA/state.db, bbolt): job
// records, per-unit results, which objects clients uploaded, and the
// server's identity. A restarted server answers for the jobs it retained
// and resumes the unfinished ones from it.
//
// Schema 2, one bucket each:
//
//	meta     schema → uint32; server_id → 32 hex digits; epoch → uint64
//	jobs     job id → jobRecord (JSON), without units
//	units    job id "/" index (uint32) → unit record (binary, unitrec.go);
//	         only units whose result was accepted have one
//	uploads  object id → upload time (int64 ns), then the id of the token
//	         that uploaded it if any: objects clients uploaded, which the
//	         collector never deletes
//	tokens   token id → tokenRecord (JSON, auth.go)
//	operations  name, 0, version (uint32) → opRecord (JSON, userops.go):
//	         every version of every user operation
//
// Every change goes through the group-commit writer (writer.go).
type stateDB struct {
	db    *bolt.DB
	w     *writer
	id    string
	epoch uint64
	// schema is the version found on disk before this start (0: none,
	// a new or pre-versioning directory); migrate brings it to
	// schemaVersion.
	schema uint32
}

// schemaVersion is the layout this build reads and writes.
const schemaVersion = 2

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

// openState opens state.db, creates what is missing, and durably takes a
// new epoch before returning, so that every start of the server has an
// epoch no earlier start had.
func openState(path string, log *slog.Logger) (*stateDB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("server: open state %s: %w (is another server using this --data dir?)", path, err)
	}
	s := &stateDB{db: db}
	if err := db.Update(s.init); err != nil {
		db.Close()
		return nil, fmt.Errorf("server: init state: %w", err)
	}
	s.w = newWriter(db, log)
	return s, nil
}

// init creates the buckets, reads the schema version, and takes the
// server id (made on the first start) and a new epoch.
func (s *stateDB) init(tx *bolt.Tx) error {
	for _, name := range [][]byte{metaBucket, jobsBucket, unitsBucket, uploadsBucket, tokensBucket, opsBucket} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(metaBucket)
	if v := meta.Get(schemaKey); len(v) == 4 {
		s.schema = binary.BigEndian.Uint32(v)
	}
	if s.schema > schemaVersion {
		return fmt.Errorf("state.db has schema %d; this build knows up to %d (a newer braid wrote it)", s.schema, schemaVersion)
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

// errStateClosed is what writes queued after close get.
var errStateClosed = errors.New("server: state database closed")

// close commits what is queued and closes the database.
func (s *stateDB) close() {
	s.w.close()
	s.db.Close()
}

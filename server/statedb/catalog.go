package statedb

import (
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// The server's tokens and user operations are its own records; state.db
// keeps each as JSON under its key.

// PutToken is the change that writes token id's record, rec as JSON.
func PutToken(id string, rec any) Change {
	return putJSON(tokensBucket, []byte(id), rec)
}

// DeleteToken is the change that removes token id's record.
func DeleteToken(id string) Change {
	return Change{apply: func(tx *txn) error { return tx.Bucket(tokensBucket).Delete([]byte(id)) }}
}

// Tokens calls fn with every token's id and record (JSON), in id order,
// and stops at the first error fn returns.
func (s *DB) Tokens(fn func(id string, rec []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(tokensBucket).ForEach(func(k, v []byte) error { return fn(string(k), v) })
	})
}

// PutOp is the change that writes version version of user operation
// name, rec as JSON.
func PutOp(name string, version int, rec any) Change {
	return putJSON(opsBucket, opKey(name, version), rec)
}

// Ops calls fn with every version of every user operation, by name and
// then version: its key (for messages) and its record (JSON). It stops at
// the first error fn returns.
func (s *DB) Ops(fn func(key, rec []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(opsBucket).ForEach(fn)
	})
}

// opKey is a version's key in the operations bucket: name, 0, version.
func opKey(name string, version int) []byte {
	return binary.BigEndian.AppendUint32(append([]byte(name), 0), uint32(version))
}

// putJSON is the change that writes rec as JSON under key, failing if rec
// cannot be encoded.
func putJSON(bucket, key []byte, rec any) Change {
	v, err := json.Marshal(rec)
	return Change{apply: func(tx *txn) error {
		if err != nil {
			return err
		}
		return tx.Bucket(bucket).Put(key, v)
	}}
}

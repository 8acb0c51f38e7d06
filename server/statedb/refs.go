package statedb

import (
	"encoding/json"

	"github.com/braidhq/braid/store"
	bolt "go.etcd.io/bbolt"
)

// unitRecOutput is where a unit record holds its output id (encode).
const unitRecOutput = 1 + 1 + 2 + 2 + 4*8

// DropRefs removes from cands every object state.db names (WalkRefs). The
// collector calls it after it has looked at the jobs in memory (package
// server, gc.go says why in that order).
func (s *DB) DropRefs(cands map[[32]byte]bool) error {
	return s.WalkRefs(func(id [32]byte) { delete(cands, id) })
}

// WalkRefs calls ref for every object state.db names: uploads, and the
// inputs, results and unit outputs of the jobs on record (an object may
// come more than once). A server on a shared store publishes them.
func (s *DB) WalkRefs(ref func(id [32]byte)) error {
	return s.db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(uploadsBucket).ForEach(func(k, _ []byte) error {
			refID(ref, string(k))
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(jobsBucket).ForEach(func(_, v []byte) error {
			var rec struct {
				Spec   struct{ Input string } `json:"spec"`
				Result string                 `json:"result"`
			}
			if json.Unmarshal(v, &rec) == nil {
				refID(ref, rec.Spec.Input)
				refID(ref, rec.Result)
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(unitsBucket).ForEach(func(_, v []byte) error {
			if len(v) >= unitRecOutput+32 && v[0] == unitRecVersion && v[1] == UnitDone {
				ref([32]byte(v[unitRecOutput : unitRecOutput+32]))
			}
			return nil
		})
		if err != nil {
			return err
		}
		return walkLogRefs(tx, ref)
	})
}

// refID calls ref for id if it is an object id.
func refID(ref func([32]byte), id string) {
	if store.ValidID(id) {
		ref(ParseID(id))
	}
}

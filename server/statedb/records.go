package statedb

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/braidhq/braid/api"
	bolt "go.etcd.io/bbolt"
)

// Job is a job as state.db keeps it: its status without units (those
// have records of their own). Its JSON field names are api.Job's, so
// schema 1's records (api.Job with units) decode into it.
type Job struct {
	ID         string         `json:"id"`
	Spec       api.JobSpec    `json:"spec"`
	Owner      string         `json:"owner,omitempty"`
	State      string         `json:"state"`
	Error      string         `json:"error,omitempty"`
	Result     string         `json:"result,omitempty"`
	ReceivedAt time.Time      `json:"received_at"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"`
	LastResult *time.Time     `json:"last_result,omitempty"`
	Progress   api.Progress   `json:"progress"`
	PerWorker  map[string]int `json:"units_per_worker,omitempty"`
}

// PutJob is the change that writes a job record.
func PutJob(rec Job) Change {
	return Change{apply: func(tx *txn) error {
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tx.Bucket(jobsBucket).Put([]byte(rec.ID), v)
	}}
}

// DeleteJob is the change that removes a job's record and its units'.
func DeleteJob(job string) Change {
	return Change{apply: func(tx *txn) error {
		if err := tx.Bucket(jobsBucket).Delete([]byte(job)); err != nil {
			return err
		}
		if err := deleteUnitLog(tx, job); err != nil {
			return err
		}
		return deletePrefix(tx.Bucket(unitsBucket), unitPrefix(job))
	}}
}

// PutUpload and DeleteUpload record and forget an object a client uploaded
// (owner: the id of its token, "" without tokens).
func PutUpload(id string, at time.Time, owner string) Change {
	return Change{apply: func(tx *txn) error {
		v := binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano()))
		return tx.Bucket(uploadsBucket).Put([]byte(id), append(v, owner...))
	}}
}

// DeleteUpload is the change that forgets object id's upload.
func DeleteUpload(id string) Change {
	return Change{apply: func(tx *txn) error { return tx.Bucket(uploadsBucket).Delete([]byte(id)) }}
}

// Upload is the record of a client's upload.
type Upload struct {
	At    time.Time
	Owner string // the id of the uploader's token
}

// Upload returns the record of object id's first upload by a client, if
// one uploaded it (a second upload of the same bytes does not rewrite the
// record).
func (s *DB) Upload(id string) (Upload, bool, error) {
	var up Upload
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(uploadsBucket).Get([]byte(id)); len(v) >= 8 {
			up.At, up.Owner, ok = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC(), string(v[8:]), true
		}
		return nil
	})
	return up, ok, err
}

// Jobs returns every job record, in the order the jobs were received.
func (s *DB) Jobs() ([]Job, error) {
	var out []Job
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(jobsBucket).ForEach(func(k, v []byte) error {
			var rec Job
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("job record %q: %w", k, err)
			}
			out = append(out, rec)
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b Job) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	return out, err
}

// StoredUnit is a unit record read back, with its worker's name.
type StoredUnit struct {
	Index   int
	Rec     Unit
	Worker  string
	ErrText string
}

// UnitStats builds the statistics of a job's units with an index in
// [from, to) from their records; units without one (never accepted) are
// pending.
func (s *DB) UnitStats(job string, from, to int) ([]api.UnitStat, error) {
	from = max(from, 0)
	stored, err := s.UnitsRange(job, from, to)
	if err != nil || to <= from {
		return nil, err
	}
	out := make([]api.UnitStat, to-from)
	for i := range out {
		out[i] = api.UnitStat{Index: from + i, State: "pending"}
	}
	for _, su := range stored {
		out[su.Index-from] = su.Rec.Stat(su.Index, su.Worker, su.ErrText)
	}
	return out, nil
}

// deletePrefix removes every key of b that starts with prefix. It collects
// the keys, then deletes them in order: a cursor's Next after Delete may
// skip a key, and seeking the prefix again after each delete walks the
// emptied leaves, quadratic in the keys.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

package server

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

// jobRecord is a job as state.db keeps it: its status without units
// (those have records of their own). Its JSON field names are api.Job's,
// so schema 1's records (api.Job with units) decode into it.
type jobRecord struct {
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

func (r *jobRecord) terminal() bool { return isTerminal(r.State) }

// putJob is the change that writes a job record.
func putJob(rec jobRecord) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tx.Bucket(jobsBucket).Put([]byte(rec.ID), v)
	}
}

// putUnit is the change that writes one unit's record.
func putUnit(job string, i int, u unitRec, worker, errText string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		return tx.Bucket(unitsBucket).Put(unitKey(job, i), u.encode(nil, worker, errText))
	}
}

// deleteJob is the change that removes a job's record and its units'.
func deleteJob(job string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		if err := tx.Bucket(jobsBucket).Delete([]byte(job)); err != nil {
			return err
		}
		// Collect the keys, then delete them in order: a cursor's Next after
		// Delete may skip a key, and seeking the prefix again after each
		// delete walks the emptied leaves, quadratic in the job's units.
		b := tx.Bucket(unitsBucket)
		prefix := unitPrefix(job)
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
}

// putUpload and deleteUpload record and forget an object a client uploaded
// (owner: the id of its token, "" without tokens).
func putUpload(id string, at time.Time, owner string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		v := binary.BigEndian.AppendUint64(nil, uint64(at.UnixNano()))
		return tx.Bucket(uploadsBucket).Put([]byte(id), append(v, owner...))
	}
}

func deleteUpload(id string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket(uploadsBucket).Delete([]byte(id)) }
}

// loadJobs returns every job record, in the order the jobs were received.
func (s *stateDB) loadJobs() ([]jobRecord, error) {
	var out []jobRecord
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(jobsBucket).ForEach(func(k, v []byte) error {
			var rec jobRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("job record %q: %w", k, err)
			}
			out = append(out, rec)
			return nil
		})
	})
	slices.SortStableFunc(out, func(a, b jobRecord) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	return out, err
}

// storedUnit is a unit record read back, with its worker's name.
type storedUnit struct {
	index   int
	rec     unitRec
	worker  string
	errText string
}

// loadUnits returns a job's unit records, by index.
func (s *stateDB) loadUnits(job string) ([]storedUnit, error) {
	var out []storedUnit
	prefix := unitPrefix(job)
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(unitsBucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+4 {
				continue
			}
			u, worker, errText, err := decodeUnitRec(v)
			if err != nil {
				return fmt.Errorf("unit record %q: %w", k, err)
			}
			out = append(out, storedUnit{index: int(binary.BigEndian.Uint32(k[len(prefix):])),
				rec: u, worker: worker, errText: errText})
		}
		return nil
	})
	return out, err
}

// loadUnitStats builds the statistics of a job's total units from their
// records; units without one (never accepted) are pending.
func (s *stateDB) loadUnitStats(job string, total int) ([]api.UnitStat, error) {
	stored, err := s.loadUnits(job)
	if err != nil {
		return nil, err
	}
	out := make([]api.UnitStat, total)
	for i := range out {
		out[i] = api.UnitStat{Index: i, State: "pending"}
	}
	for _, su := range stored {
		if su.index < total {
			out[su.index] = su.rec.stat(su.index, su.worker, su.errText)
		}
	}
	return out, nil
}

package statedb

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/braidhq/braid/api"
	bolt "go.etcd.io/bbolt"
)

// Migrate brings a state.db found at an older schema to SchemaVersion in
// one transaction; objects are the ids already in the store. It does
// nothing to a database at SchemaVersion.
//
// From schema 0 or 1 (builds before the version was recorded): those
// builds did not record which objects clients uploaded, so every object
// already stored is marked uploaded and the collector never deletes it;
// and their job records carried every unit's statistics, so each becomes
// a job record without units plus records of its accepted units.
//
// From schema 2: new unit records go to the unit log (unitlog.go); the
// old ones stay where they are and are still read, so nothing is
// rewritten.
func (s *DB) Migrate(objects []string) error {
	if s.schema == SchemaVersion {
		return nil
	}
	err := s.db.Update(func(btx *bolt.Tx) error {
		tx := newTxn(btx, newNameCache())
		if s.schema < 2 {
			now := time.Now()
			for _, id := range objects {
				if err := PutUpload(id, now, "").apply(tx); err != nil {
					return err
				}
			}
			if err := splitV1Jobs(tx); err != nil {
				return err
			}
			if err := tx.flush(); err != nil {
				return err
			}
		}
		return setSchema(btx, SchemaVersion)
	})
	if err != nil {
		return fmt.Errorf("statedb: migrating state.db from schema %d: %w", s.schema, err)
	}
	return nil
}

// splitV1Jobs rewrites schema 1 job records (api.Job with units).
func splitV1Jobs(tx *txn) error {
	var old []api.Job
	err := tx.Bucket(jobsBucket).ForEach(func(k, v []byte) error {
		var j api.Job
		if err := json.Unmarshal(v, &j); err != nil {
			return fmt.Errorf("job record %q: %w", k, err)
		}
		old = append(old, j)
		return nil
	})
	if err != nil {
		return err
	}
	for _, j := range old {
		rec := Job{ID: j.ID, Spec: j.Spec, State: j.State, Error: j.Error, Result: j.Result,
			ReceivedAt: j.ReceivedAt, FinishedAt: j.FinishedAt, Progress: j.Progress, PerWorker: j.UnitsPerWorker}
		for _, u := range j.Units {
			if u.State != "done" && u.State != "failed" {
				continue
			}
			if u.Returned != nil && (rec.LastResult == nil || u.Returned.After(*rec.LastResult)) {
				t := *u.Returned
				rec.LastResult = &t
			}
			if err := PutUnit(j.ID, u.Index, unitFromV1(u), u.Worker, u.Error).apply(tx); err != nil {
				return err
			}
		}
		if err := PutJob(rec).apply(tx); err != nil {
			return err
		}
	}
	return nil
}

func unitFromV1(u api.UnitStat) Unit {
	r := Unit{State: UnitDone, Stream: uint16(u.Stream), Attempts: uint16(min(u.Attempts, 1<<16-1)),
		Queued:  int64(u.QueuedMS * float64(time.Millisecond)),
		Compute: int64(u.ComputeMS * float64(time.Millisecond)), Output: ParseID(u.Output)}
	if u.State == "failed" {
		r.State = UnitFailed
	}
	if u.Sent != nil {
		r.Sent = u.Sent.UnixNano()
	}
	if u.Returned != nil {
		r.Returned = u.Returned.UnixNano()
	}
	return r
}

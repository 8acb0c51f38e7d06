package server

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/braidhq/braid/api"
	bolt "go.etcd.io/bbolt"
)

// migrate brings a state.db found at an older schema to schemaVersion in
// one transaction; objects are the ids already in the store.
//
// From schema 0 or 1 (builds before the version was recorded): those
// builds did not record which objects clients uploaded, so every object
// already stored is marked uploaded and the collector never deletes it;
// and their job records carried every unit's statistics, so each becomes
// a job record without units plus one record per accepted unit.
func (s *stateDB) migrate(objects []string) error {
	if s.schema == schemaVersion {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		now := time.Now()
		for _, id := range objects {
			if err := putUpload(id, now, "")(tx); err != nil {
				return err
			}
		}
		if err := splitV1Jobs(tx); err != nil {
			return err
		}
		return setSchema(tx, schemaVersion)
	})
	if err != nil {
		return fmt.Errorf("server: migrating state.db from schema %d: %w", s.schema, err)
	}
	return nil
}

// splitV1Jobs rewrites schema 1 job records (api.Job with units).
func splitV1Jobs(tx *bolt.Tx) error {
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
		rec := jobRecord{ID: j.ID, Spec: j.Spec, State: j.State, Error: j.Error, Result: j.Result,
			ReceivedAt: j.ReceivedAt, FinishedAt: j.FinishedAt, Progress: j.Progress, PerWorker: j.UnitsPerWorker}
		for _, u := range j.Units {
			if u.State != "done" && u.State != "failed" {
				continue
			}
			if u.Returned != nil && (rec.LastResult == nil || u.Returned.After(*rec.LastResult)) {
				t := *u.Returned
				rec.LastResult = &t
			}
			if err := putUnit(j.ID, u.Index, unitFromV1(u), u.Worker, u.Error)(tx); err != nil {
				return err
			}
		}
		if err := putJob(rec)(tx); err != nil {
			return err
		}
	}
	return nil
}

func unitFromV1(u api.UnitStat) unitRec {
	r := unitRec{state: unitDone, stream: uint16(u.Stream), attempts: uint16(min(u.Attempts, 1<<16-1)),
		queued:  int64(u.QueuedMS * float64(time.Millisecond)),
		compute: int64(u.ComputeMS * float64(time.Millisecond)), output: parseOutput(u.Output)}
	if u.State == "failed" {
		r.state = unitFailed
	}
	if u.Sent != nil {
		r.sent = u.Sent.UnixNano()
	}
	if u.Returned != nil {
		r.returned = u.Returned.UnixNano()
	}
	return r
}

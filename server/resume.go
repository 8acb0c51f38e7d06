package server

import (
	"fmt"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/server/statedb"
)

// resume reloads state.db at start: finished jobs are served as they were
// (and retained by the policy), unfinished ones are split again and run
// only their units without a stored result.
func (s *Server) resume() error {
	recs, err := s.db.Jobs()
	if err != nil {
		return err
	}
	var finished []*jobRun
	var unfinished []statedb.Job
	for _, rec := range recs {
		if isTerminal(rec.State) {
			j := restoredJob(rec)
			s.addVisible(j)
			finished = append(finished, j)
			continue
		}
		unfinished = append(unfinished, rec)
	}
	for _, rec := range upstreamFirst(unfinished) {
		s.resumeJob(rec)
	}
	s.retainRestored(finished)
	return nil
}

// upstreamFirst orders unfinished jobs so that a job over another's
// outputs (JobSpec.InputJob) resumes after it.
func upstreamFirst(recs []statedb.Job) []statedb.Job {
	pending := map[string]bool{}
	for _, r := range recs {
		pending[r.ID] = true
	}
	out := make([]statedb.Job, 0, len(recs))
	for len(out) < len(recs) {
		progress := false
		for _, r := range recs {
			if pending[r.ID] && !pending[r.Spec.InputJob] {
				out, pending[r.ID], progress = append(out, r), false, true
			}
		}
		if !progress { // a cycle, which submit cannot make: take the rest as they come
			for _, r := range recs {
				if pending[r.ID] {
					out, pending[r.ID] = append(out, r), false
				}
			}
		}
	}
	return out
}

// resumeJob restarts an unfinished job. Units with a stored result whose
// output object still exists are done; the rest run again. A job with a
// failed unit on record is failed (it crashed before saying so); a job that
// cannot be split again fails with the reason.
func (s *Server) resumeJob(rec statedb.Job) {
	if rec.Spec.Input != "" { // a job of many inputs touches them as it is split
		if _, err := s.store.Touch(s.ctx, rec.Spec.Input); err != nil {
			s.failResumed(rec, fmt.Errorf("input object %s: %w", rec.Spec.Input, err))
			return
		}
	}
	j, err := s.split(rec.ID, rec.Spec, rec.ReceivedAt)
	if err != nil {
		s.failResumed(rec, err)
		return
	}
	j.owner = rec.Owner
	done, err := s.restoreUnits(j)
	if err != nil {
		s.failResumed(rec, err)
		return
	}
	s.addVisible(j)
	if !s.disp.post(func() { s.disp.addJob(j) }) {
		return
	}
	s.log.Info("resumed unfinished job", "job", rec.ID, "units", j.total(), "already_done", done)
}

// restoreUnits marks done the units of j whose stored output still
// exists, and returns how many; a failed unit on record is an error.
func (s *Server) restoreUnits(j *jobRun) (int, error) {
	n := j.total()
	exists := map[[32]byte]bool{} // a repeat job's units often share their output
	j.mu.Lock()
	defer j.mu.Unlock()
	done := 0
	err := s.db.EachUnit(j.id, n, func(su statedb.StoredUnit) error {
		switch {
		case su.Rec.State == statedb.UnitFailed:
			return fmt.Errorf("unit %d failed on worker %s: %s", su.Index, su.Worker, su.ErrText)
		case su.Rec.State != statedb.UnitDone || !su.Rec.HasOutput():
			return nil
		}
		there, known := exists[su.Rec.Output]
		if !known {
			_, err := s.store.Stat(s.ctx, statedb.HexID(su.Rec.Output))
			there = err == nil // collected or lost: run it again
			exists[su.Rec.Output] = there
		}
		if !there {
			return nil
		}
		j.settled.add(su.Index)
		j.perWorker[su.Worker]++
		if t := time.Unix(0, su.Rec.Returned); su.Rec.Returned != 0 && t.After(j.lastResult) {
			j.lastResult = t
		}
		done++
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading its units: %w", err)
	}
	if done > 0 {
		j.state = api.JobRunning
		j.progress.Done, j.progress.Pending = done, j.progress.Total-done
	}
	return done, nil
}

// failResumed records and shows a job that could not be resumed.
func (s *Server) failResumed(rec statedb.Job, err error) {
	now := time.Now()
	rec.State, rec.Error, rec.FinishedAt = api.JobFailed, "could not resume after a server restart: "+err.Error(), &now
	if werr := s.db.Sync(statedb.PutJob(rec)); werr != nil {
		s.log.Error("saving a job that could not be resumed", "job", rec.ID, "err", werr)
	}
	j := restoredJob(rec)
	s.addVisible(j)
	s.retainRestored([]*jobRun{j})
	s.log.Warn("could not resume job", "job", rec.ID, "err", err)
}

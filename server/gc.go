package server

import (
	"context"
	"time"

	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
)

// collect deletes the objects the server wrote (unit outputs, stitched
// results, manifests) that no retained job references and that nobody
// stored or touched for Config.GCGrace. Objects clients uploaded are never
// collected (state.db's uploads bucket).
//
// It is safe against concurrent writers of the same content-addressed id
// by the rule package store explains (Collection): the cutoff is taken
// before the references are read, every reference is recorded within nine
// tenths of the grace period (the store's TouchEvery is the last tenth) of
// the Put or Touch before it (a unit's output is stored by
// the stream reader and accepted on the loop moments later; a submit
// touches its input before it records the job), and the store removes an
// object only if it was not refreshed since the cutoff. References are
// read from memory first (running jobs, whose units are not all on disk
// yet) and then from state.db (finished jobs, whose units are on disk
// before they leave memory), so a job moving from one to the other in
// between is seen at least once.
func (s *Server) collect(ctx context.Context) {
	start := time.Now()
	cutoff := start.Add(-s.cfg.GCGrace)
	objs, err := s.store.List(ctx)
	if err != nil {
		s.log.Error("collector: listing objects", "err", err)
		return
	}
	cands := map[[32]byte]bool{}
	for _, o := range objs {
		if o.Created.Before(cutoff) {
			cands[statedb.ParseID(o.ID)] = true
		}
	}
	if len(cands) == 0 {
		return
	}
	s.dropLiveRefs(cands)
	if err := s.db.DropRefs(cands); err != nil {
		s.log.Error("collector: reading references", "err", err)
		return
	}
	removed := 0
	for id := range cands {
		if ctx.Err() != nil {
			break
		}
		ok, err := s.store.RemoveIfOlder(ctx, statedb.HexID(id), cutoff)
		if err != nil {
			s.log.Warn("collector: removing an object", "object", statedb.HexID(id), "err", err)
		}
		if ok {
			removed++
		}
	}
	if removed > 0 {
		s.log.Info("collected unreferenced objects", "removed", removed, "took", time.Since(start).Round(time.Millisecond))
	}
}

// dropLiveRefs removes from cands every object a job in memory names.
func (s *Server) dropLiveRefs(cands map[[32]byte]bool) {
	s.jobsMu.RLock()
	defer s.jobsMu.RUnlock()
	for _, j := range s.jobs {
		j.dropRefs(cands)
	}
}

// dropRefs removes from cands the objects j names: its input, its
// result, and its units' outputs while they are in memory.
func (j *jobRun) dropRefs(cands map[[32]byte]bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	dropRef(cands, j.spec.Input)
	dropRef(cands, j.result)
	if j.units == nil {
		return
	}
	for _, in := range j.inputs {
		delete(cands, in)
	}
	for i := range j.units.recs {
		if u := &j.units.recs[i]; u.HasOutput() {
			delete(cands, u.Output)
		}
	}
}

// dropRef removes object id (if it is one) from cands.
func dropRef(cands map[[32]byte]bool, id string) {
	if store.ValidID(id) {
		delete(cands, statedb.ParseID(id))
	}
}

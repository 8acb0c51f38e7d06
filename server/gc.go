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
	drop := func(id [32]byte) { delete(cands, id) }
	s.walkLiveRefs(drop)
	if err := s.db.DropRefs(cands); err != nil {
		s.log.Error("collector: reading references", "err", err)
		return
	}
	if !s.dropOthersRefs(ctx, drop) {
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

// walkLiveRefs calls ref for every object a job in memory names.
func (s *Server) walkLiveRefs(ref func([32]byte)) {
	s.jobsMu.RLock()
	defer s.jobsMu.RUnlock()
	for _, j := range s.jobs {
		j.walkRefs(ref)
	}
}

// walkRefs calls ref for the objects j names: its input, its result (from
// the moment it is stored, before its record is on disk), and while it
// runs its inputs and the outputs of its units accepted and not yet on
// disk (those on disk state.db names).
func (j *jobRun) walkRefs(ref func([32]byte)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	refID(ref, j.spec.Input)
	refID(ref, j.result)
	refID(ref, j.storedResult)
	if !j.runningLocked() {
		return
	}
	for _, in := range j.inputs {
		ref(in)
	}
	for _, out := range j.pendingOut {
		ref(out)
	}
}

// refID calls ref for id if it is an object id.
func refID(ref func([32]byte), id string) {
	if store.ValidID(id) {
		ref(statedb.ParseID(id))
	}
}

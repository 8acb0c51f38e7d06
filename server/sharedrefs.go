package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/braidhq/braid/store"
)

// A server on a store that several servers share (store.Shared: an S3
// bucket) publishes the complete set of objects it references, so that
// the other servers' collectors keep them, and its own collector keeps
// what the others' sets name. It publishes before it serves, every
// publishEvery, and a final set when it stops; store.Shared states the
// rule and store/s3's doc the proof.

// publishEvery is half of the store's TouchEvery: a set is then never
// older than TouchEvery unless its server is gone.
func (s *Server) publishEvery() time.Duration {
	return max(touchEvery(s.cfg.GCGrace)/2, time.Second)
}

// publishRefs publishes this server's references if its store is shared.
func (s *Server) publishRefs(ctx context.Context, final bool) error {
	sh, ok := s.store.(store.Shared)
	if !ok {
		return nil
	}
	set := map[[32]byte]struct{}{}
	ref := func(id [32]byte) { set[id] = struct{}{} }
	s.walkLiveRefs(ref)
	if err := s.db.WalkRefs(ref); err != nil {
		return fmt.Errorf("server: reading references to publish: %w", err)
	}
	ids := make([][32]byte, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	if err := sh.PublishRefs(ctx, ids, final); err != nil {
		return fmt.Errorf("server: publishing this server's references to the shared store: %w", err)
	}
	return nil
}

// refsPublisher publishes this server's references every publishEvery
// until ctx ends. A failure is logged and tried again at the next tick;
// a set left older than the bound holds other servers' collectors back,
// which is the safe side.
func (s *Server) refsPublisher(ctx context.Context) {
	t := time.NewTicker(s.publishEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			if err := s.publishRefs(ctx, false); err != nil && ctx.Err() == nil {
				s.log.Warn("publishing references", "err", err)
			} else if took := time.Since(start); took > s.publishEvery()/2 {
				s.log.Warn("publishing references took over a quarter of the store's TouchEvery; other servers may find them stale",
					"took", took.Round(time.Millisecond))
			}
		}
	}
}

// dropOthersRefs calls drop for every object another server's published
// set names, when the store is shared, and reports whether collection
// may go on: not when a set is stale or could not be read.
func (s *Server) dropOthersRefs(ctx context.Context, drop func([32]byte)) bool {
	sh, ok := s.store.(store.Shared)
	if !ok {
		return true
	}
	err := sh.OthersRefs(ctx, drop)
	switch {
	case errors.Is(err, store.ErrStaleRefs):
		s.log.Warn("collector: waiting for another server", "err", err)
		return false
	case err != nil:
		s.log.Error("collector: reading other servers' references", "err", err)
		return false
	}
	return true
}

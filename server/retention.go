package server

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/braidhq/braid/server/statedb"
)

// retention keeps finished jobs by a policy of age and count
// (Config.RetainFor, Config.RetainJobs): a finished job is removed, with
// its unit records, once it has been finished for RetainFor or once more
// than RetainJobs jobs are finished, oldest first. Its objects are then
// unreferenced and go to the collector (gc.go).
type retention struct {
	mu   sync.Mutex // guards q, live and every jobRun's retained; taken before a jobRun's mu
	q    []*jobRun  // finished jobs in the order they finished; removed ones are skipped
	live int        // jobs in q still retained
}

// add starts retaining finished jobs, in the order given.
func (r *retention) add(js ...*jobRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range js {
		j.retained = true
		r.q = append(r.q, j)
		r.live++
	}
}

// drop stops retaining j (it was removed otherwise).
func (r *retention) drop(j *jobRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j.retained {
		j.retained = false
		r.live--
	}
}

// expired takes out of the queue the jobs the policy no longer keeps: the
// oldest beyond maxJobs (< 0: no limit) and those finished before cutoff
// (zero: no age limit).
func (r *retention) expired(cutoff time.Time, maxJobs int) []*jobRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*jobRun
	for len(r.q) > 0 {
		j := r.q[0]
		if j.retained {
			over := maxJobs >= 0 && r.live > maxJobs
			if !over && (cutoff.IsZero() || !j.finishedBefore(cutoff)) {
				break
			}
			j.retained = false
			r.live--
			out = append(out, j)
		}
		r.q[0] = nil
		r.q = r.q[1:]
	}
	if cap(r.q) > 2*len(r.q)+1024 { // let the array shrink
		r.q = slices.Clone(r.q)
	}
	return out
}

func (j *jobRun) finishedBefore(t time.Time) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.finishedAt.Before(t)
}

// retained hands a job that just became finished to the policy.
func (s *Server) retained(j *jobRun) { s.retention.add(j) }

// retainRestored hands the finished jobs read at start to the policy,
// oldest first.
func (s *Server) retainRestored(js []*jobRun) {
	slices.SortStableFunc(js, func(a, b *jobRun) int { return a.finishedAt.Compare(b.finishedAt) })
	s.retention.add(js...)
}

// retire removes the finished jobs the policy no longer keeps.
func (s *Server) retire(now time.Time) {
	var cutoff time.Time
	if s.cfg.RetainFor > 0 {
		cutoff = now.Add(-s.cfg.RetainFor)
	}
	for _, j := range s.retention.expired(cutoff, s.cfg.RetainJobs) {
		if s.unfinishedDownstream(j.id) != "" {
			s.retention.add(j) // kept until the jobs over its outputs finish
			continue
		}
		s.removeJob(j)
	}
}

// removeJob deletes a finished job: from the jobs map at once, from
// state.db (its record and its units') with the next commit, which the
// returned channel reports. It returns nil if the job was already gone.
func (s *Server) removeJob(j *jobRun) <-chan error {
	s.jobsMu.Lock()
	if s.jobs[j.id] != j {
		s.jobsMu.Unlock()
		return nil
	}
	delete(s.jobs, j.id)
	s.jobsMu.Unlock()
	s.retention.drop(j)
	done := make(chan error, 1)
	s.db.Queue(statedb.DeleteJob(j.id).Then(func(err error) { done <- err }))
	return done
}

// janitorEvery is how often retention runs; the collector runs every
// gcEvery.
const janitorEvery = 250 * time.Millisecond

// gcEvery is the collector's period: a tenth of the grace period, between
// 100ms and a minute.
func (s *Server) gcEvery() time.Duration {
	return min(max(s.cfg.GCGrace/10, 100*time.Millisecond), time.Minute)
}

// janitor runs retention and the collector until ctx ends.
func (s *Server) janitor(ctx context.Context) {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	lastGC := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.retire(now)
			if s.cfg.GCGrace >= 0 && now.Sub(lastGC) >= s.gcEvery() {
				s.collect(ctx)
				lastGC = now
			}
		}
	}
}

package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/api"
)

// maxWait bounds a long-poll.
const maxWait = 5 * time.Minute

func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var spec api.JobSpec
	if err := readJSON(w, r, &spec); err != nil {
		writeError(w, err)
		return
	}
	j, err := s.submit(spec, callerOf(r))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+j.id)
	writeJSON(w, http.StatusCreated, j.summary())
}

func (s *Server) lookupJob(w http.ResponseWriter, r *http.Request) *jobRun {
	id := r.PathValue("id")
	j := s.job(id)
	if j != nil && !callerOf(r).sees(j.owner) {
		j = nil // as if it did not exist: ids do not leak
	}
	if j == nil {
		writeError(w, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("no job %q", id)})
	}
	return j
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	if j := s.lookupJob(w, r); j != nil {
		s.writeStatus(w, r, j, r.URL.Query().Get("units") != "0")
	}
}

// maxUnitPage is the most unit statistics one answer holds: a job's
// status with units has its first maxUnitPage units (or those ?after= and
// ?limit= ask for) and a Link to the next page (paging.go).
const maxUnitPage = 10_000

// writeStatus answers 200 with j's status, with a page of its units'
// statistics if asked.
func (s *Server) writeStatus(w http.ResponseWriter, r *http.Request, j *jobRun, withUnits bool) {
	out := j.snapshot()
	if withUnits {
		p, err := readPage(r, maxUnitPage)
		from := 0
		if err == nil && p.after != "" {
			var after int
			if after, err = strconv.Atoi(p.after); err != nil || after < -1 {
				err = badRequest(api.CodeBadParameter, "after %q: want a unit index", p.after)
			}
			from = after + 1
		}
		if err != nil {
			writeError(w, err)
			return
		}
		to := min(from+p.limit, out.Progress.Total)
		if out.Units, err = s.unitStats(r.Context(), j, from, to); err != nil {
			writeError(w, fmt.Errorf("reading job %s's units: %w", j.id, err))
			return
		}
		if to < out.Progress.Total {
			setNext(w, r, p, strconv.Itoa(to-1))
		}
	}
	s.withRunning(&out)
	writeJSON(w, 200, out)
}

// withRunning fills in Progress.Running of the jobs that are not finished
// from the counts the dispatch loop publishes (views.go), without waiting
// for the loop; snapshots leave it 0.
func (s *Server) withRunning(jobs ...*api.Job) {
	for _, j := range jobs {
		if !j.Terminal() {
			j.Progress.Running = min(s.disp.views.runningOf(j.ID), j.Progress.Sent)
		}
	}
}

// summary is j's status without units.
func (j *jobRun) summary() api.Job {
	return j.snapshot()
}

// listed is j's status as a page of GET /v1/jobs shows it: without units
// nor its count of units by worker, which a job's own status has. A page
// of 100 jobs on 10,000 workers would otherwise be some 23 MB of JSON,
// and a dashboard polling the first page would cost the server a
// 10,000-entry map to copy and encode each time.
func (j *jobRun) listed() api.Job {
	return j.status(false)
}

// handleListJobs serves GET /v1/jobs in the order the jobs were
// received, a page at a time (paging.go; after names a job).
func (s *Server) handleListJobs(w http.ResponseWriter, r *http.Request) {
	p, err := readPage(r, maxPage)
	if err != nil {
		writeError(w, err)
		return
	}
	c := callerOf(r)
	s.jobsMu.RLock()
	all := make([]*jobRun, 0, len(s.jobs))
	for _, j := range s.jobs {
		if c.sees(j.owner) {
			all = append(all, j)
		}
	}
	after := s.jobs[p.after]
	s.jobsMu.RUnlock()
	if p.after != "" && (after == nil || !c.sees(after.owner)) {
		writeError(w, &apiError{status: 404, code: api.CodeNotFound,
			msg: fmt.Sprintf("after %q: no such job to list after (removed since the last page?); list from the start", p.after)})
		return
	}
	// receivedAt is set once, before a job is visible: no lock needed.
	order := func(a, b *jobRun) int { return cmp.Or(a.receivedAt.Compare(b.receivedAt), strings.Compare(a.id, b.id)) }
	slices.SortFunc(all, order)
	lo := 0
	if after != nil {
		lo, _ = slices.BinarySearchFunc(all, after, order)
		lo++
	}
	lo = min(lo, len(all))
	hi := min(lo+p.limit, len(all))
	out := make([]api.Job, hi-lo)
	ptrs := make([]*api.Job, len(out))
	for i, j := range all[lo:hi] {
		out[i] = j.listed()
		ptrs[i] = &out[i]
	}
	s.withRunning(ptrs...)
	if hi < len(all) {
		setNext(w, r, p, all[hi-1].id)
	}
	writeJSON(w, 200, out)
}

// handleWait long-polls until the job is terminal or ?timeout= (default 30s,
// at most 5m) passes, then returns the status either way.
func (s *Server) handleWait(w http.ResponseWriter, r *http.Request) {
	j := s.lookupJob(w, r)
	if j == nil {
		return
	}
	timeout := 30 * time.Second
	if v := r.URL.Query().Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			writeError(w, badRequest(api.CodeBadParameter, "timeout %q: want a duration such as 30s", v))
			return
		}
		timeout = min(d, maxWait)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		ch, done := j.watch()
		if done {
			break
		}
		select {
		case <-ch:
			continue
		case <-timer.C:
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
		}
		break
	}
	s.writeStatus(w, r, j, r.URL.Query().Get("units") == "1")
}

// handleEvents streams the job's progress as server-sent events, at most
// ten a second, ending with a "done" event.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	j := s.lookupJob(w, r)
	if j == nil {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, fmt.Errorf("streaming unsupported"))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	for {
		ch, done := j.watch()
		ev := api.Event{Type: "progress", Job: j.summary()}
		if done {
			ev.Type = "done"
		}
		s.withRunning(&ev.Job)
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, strings.TrimSpace(string(b)))
		fl.Flush()
		if done {
			return
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
		select { // coalesce bursts
		case <-time.After(100 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
}

// handleCancel cancels a job and answers once the cancellation is on
// disk. The request's context does not undo a cancel once queued.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	j := s.lookupJob(w, r)
	if j == nil {
		return
	}
	type answer struct {
		durable <-chan error
		err     error
	}
	res := make(chan answer, 1)
	if !s.disp.post(func() {
		durable, err := s.disp.cancel(j)
		res <- answer{durable, err}
	}) {
		writeError(w, ErrServerClosed)
		return
	}
	var a answer
	select {
	case a = <-res:
	case <-s.stopped:
		writeError(w, ErrServerClosed)
		return
	}
	if a.err == nil {
		if err := <-a.durable; err != nil {
			a.err = fmt.Errorf("saving the cancellation: %w", err)
		}
	}
	if a.err != nil {
		writeError(w, a.err)
		return
	}
	writeJSON(w, 200, j.summary())
}

// handleDeleteJob removes a finished job and its unit records (204); a job
// that is not finished must be cancelled first (409).
func (s *Server) handleDeleteJob(w http.ResponseWriter, r *http.Request) {
	j := s.lookupJob(w, r)
	if j == nil {
		return
	}
	if !j.finished() {
		writeError(w, conflict("job %s is not finished; cancel it first", j.id))
		return
	}
	if down := s.unfinishedDownstream(j.id); down != "" {
		writeError(w, conflict("job %s is not finished and runs on the outputs of job %s (input_job); cancel it or wait for it", down, j.id))
		return
	}
	done := s.removeJob(j)
	if done == nil {
		writeError(w, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("no job %q", j.id)})
		return
	}
	if err := <-done; err != nil {
		writeError(w, fmt.Errorf("deleting job %s: %w", j.id, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

package server

import (
	"fmt"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/server/statedb"
)

// A job with JobSpec.InputJob runs one unit per unit of another job (its
// upstream), on that unit's output. The downstream job's units are held
// by the scheduler until their input exists: each is released as the
// upstream unit's result is accepted, so the two jobs overlap. The
// dispatch loop keeps, per upstream job still running, its downstream
// jobs (dispatcher.downstream); an upstream that fails or is cancelled
// fails them.

// validJobID reports whether id has the shape newJobID gives.
func validJobID(id string) bool {
	if len(id) != len("j-")+12 || id[:2] != "j-" {
		return false
	}
	for _, c := range id[2:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// splitInputJob builds a job over another job's outputs: as many units
// as that job has. The outputs that exist now are its inputs at once,
// touched (the caller holds refsMu) so the collector leaves them; the loop
// adds those that come later (addInputJob, releaseDownstream).
func (s *Server) splitInputJob(id string, spec api.JobSpec, setup unitSetup, received time.Time) (*jobRun, error) {
	s.jobsMu.RLock()
	up := s.jobs[spec.InputJob]
	s.jobsMu.RUnlock()
	if up == nil {
		return nil, &apiError{status: 404, code: api.CodeNotFound, msg: fmt.Sprintf("no job %s (input_job)", spec.InputJob)}
	}
	up.mu.Lock()
	state, n := up.state, up.progress.Total
	up.mu.Unlock()
	if state == api.JobFailed || state == api.JobCancelled {
		return nil, badRequest(api.CodeBadRequest, "input job %s is %s: its outputs are not all there", spec.InputJob, state)
	}
	if n > MaxUnits {
		return nil, badRequest(api.CodeTooLarge, "input job %s has %d units: a job over another's outputs has one unit per output, at most %d",
			spec.InputJob, n, MaxUnits)
	}
	outputs, err := s.doneOutputs(up)
	if err != nil {
		return nil, fmt.Errorf("reading the outputs of job %s: %w", up.id, err)
	}
	var ids []string
	for _, o := range outputs {
		if o != ([32]byte{}) {
			ids = append(ids, statedb.HexID(o))
		}
	}
	if _, bad, err := s.touchAll(ids); err != nil {
		return nil, fmt.Errorf("output %s of job %s: %w", ids[bad], up.id, err)
	}
	j := newJobRun(id, spec, n, received)
	j.params, j.digest, j.inputs = setup.params, setup.digest, outputs
	return j, nil
}

// addInputJob holds, as the loop adds downstream job j, the units whose
// input does not exist yet, taking those that came since the split from
// the upstream's units (read again: on the loop, none is accepted
// meanwhile), and registers j to get the rest. It returns false, having
// failed j, if the upstream is gone, or ended (or is ending) other than
// done.
func (d *dispatcher) addInputJob(j *jobRun, units []scheduler.Unit) bool {
	d.s.jobsMu.RLock()
	up := d.s.jobs[j.spec.InputJob]
	d.s.jobsMu.RUnlock()
	if up == nil {
		d.endJob(j, api.JobFailed, fmt.Sprintf("its input job %s is gone", j.spec.InputJob), "")
		return false
	}
	up.mu.Lock()
	upState, running := up.state, up.runningLocked()
	up.mu.Unlock()
	if running { // outputs accepted since the split
		outputs, err := d.s.doneOutputs(up)
		if err != nil {
			d.endJob(j, api.JobFailed, fmt.Sprintf("reading the outputs of its input job %s: %v", up.id, err), "")
			return false
		}
		j.mu.Lock()
		for i, o := range outputs {
			if i < len(j.inputs) && o != ([32]byte{}) {
				j.inputs[i] = o
			}
		}
		j.mu.Unlock()
	}
	ended := up.end // decided on the loop, maybe not yet published
	if ended == "" {
		ended = upState
	}
	if ended == api.JobFailed || ended == api.JobCancelled {
		d.endJob(j, api.JobFailed, fmt.Sprintf("its input job %s was %s", up.id, ended), "")
		return false
	}
	missing := 0
	j.mu.Lock()
	for i := range units {
		if j.inputs[i] == ([32]byte{}) && !units[i].Done {
			units[i].Held = true
			missing++
		}
	}
	j.mu.Unlock()
	if missing > 0 && isTerminal(upState) {
		d.endJob(j, api.JobFailed, fmt.Sprintf("its input job %s ended without the outputs of %d units", up.id, missing), "")
		return false
	}
	if !isTerminal(upState) && up.end == "" {
		d.downstream[up.id] = append(d.downstream[up.id], j)
	}
	return true
}

// unfinishedDownstream names a job that is not finished and runs on the
// outputs of job id, or is "".
func (s *Server) unfinishedDownstream(id string) string {
	s.jobsMu.RLock()
	defer s.jobsMu.RUnlock()
	for _, j := range s.jobs {
		if j.spec.InputJob == id && !j.finished() {
			return j.id
		}
	}
	return ""
}

// canSeeJob reports whether caller c may name job id (a submit token sees
// its own jobs only).
func (s *Server) canSeeJob(c caller, id string) bool {
	s.jobsMu.RLock()
	j := s.jobs[id]
	s.jobsMu.RUnlock()
	return j == nil || c.sees(j.owner) // a missing job: split says so
}

// doneOutputs are a job's units' outputs by index, zero where a unit has
// none (yet): those whose record is not yet on disk from memory, taken
// first, then those on disk (a record moving to disk meanwhile is read
// there).
func (s *Server) doneOutputs(j *jobRun) ([][32]byte, error) {
	j.mu.Lock()
	n := j.progress.Total
	out := make([][32]byte, n)
	for i, o := range j.pendingOut {
		out[i] = o
	}
	j.mu.Unlock()
	err := s.db.EachUnit(j.id, n, func(su statedb.StoredUnit) error {
		if su.Rec.State == statedb.UnitDone && su.Rec.HasOutput() {
			out[su.Index] = su.Rec.Output
		}
		return nil
	})
	return out, err
}

// releaseDownstream gives unit i's output, just accepted (size bytes), to
// the jobs waiting on up's outputs.
func (d *dispatcher) releaseDownstream(up *jobRun, i int, output [32]byte, size int64) {
	for _, j := range d.downstream[up.id] {
		if j.end != "" || j.assembling || i >= len(j.inputs) {
			continue
		}
		j.mu.Lock()
		j.inputs[i] = output
		j.mu.Unlock()
		d.step(scheduler.UnitsReleased{Job: j.id, Units: []int{i}, Sizes: []int64{size}})
	}
}

// upstreamEnded fails the jobs waiting on a job that failed or was
// cancelled; a job done has released them all.
func (d *dispatcher) upstreamEnded(up *jobRun, state string) {
	waiting := d.downstream[up.id]
	delete(d.downstream, up.id)
	if state == api.JobDone {
		return
	}
	for _, j := range waiting {
		if j.end == "" && !j.assembling { // one assembling has all it needs
			d.failJob(j, fmt.Sprintf("its input job %s was %s", up.id, state))
		}
	}
}

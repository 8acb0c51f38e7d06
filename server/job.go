package server

import (
	"fmt"
	"image"
	"maps"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
)

// jobRun is a job in the server's memory.
//
// A job's state as clients see it (state) only moves to a terminal one
// once that state, and the records of its accepted units, are on disk: the
// dispatch loop decides (end), the state writer commits, and publish makes
// it visible.
//
// A job holds no record per unit: each accepted unit's statistics go to
// state.db (its unit log) as they come, and while the job runs it keeps
// only which units were accepted (settled, a few bytes per thousand units
// of a job whose units are accepted about in order) and the outputs of
// those whose record is not yet on disk. So a job of ten million units
// costs little more memory than one of ten.
type jobRun struct {
	id    string
	spec  api.JobSpec
	owner string // the id of the token that submitted it (auth.go)
	// Set by split; read by the loop, which drops them when the job ends.
	input  []byte     // repeat jobs: every unit's input
	tiles  []ops.Tile // tiled jobs: unit i's input is tiles[i].Data
	inputs [][32]byte // jobs of many inputs: unit i's input object, read when it is sent; the loop clears it under mu
	ahead  *readAhead // loop-owned: reads inputs ahead of send (jobs of many inputs)
	// inputSizes are inputs' sizes, from submission, for the scheduler's
	// byte budgets (a resumed job has none); addJob drops them.
	inputSizes []int64
	params     ops.Params // unit params (tiles add format=png; a user operation's invocation)
	digest     [32]byte   // a user operation's module; zero for built-ins
	modules    []string   // the object ids of every user operation's module (a pipeline's too)
	format     string     // tiled jobs: the output format
	bounds     image.Rectangle
	// Loop-owned. assembling is set while the result is being built (the
	// job cannot be cancelled then); end is the terminal state the loop
	// decided, "" while the job runs; started is set once a unit was sent.
	assembling bool
	end        string
	started    bool
	// retained: the job is in the retention queue (guarded by
	// Server.retention.mu).
	retained bool

	mu         sync.Mutex // guards everything below
	state      string
	waiting    string
	errText    string
	result     string
	receivedAt time.Time
	lastResult time.Time
	finishedAt time.Time

	// storedResult is the result assembly stored, from the moment its Put
	// returns until publish shows it as result: in between neither result
	// nor state.db names it, and the collector must see it (walkRefs).
	storedResult string
	// progress is what clients see: while the job runs, the core's count
	// (core, set by the dispatch loop's refresh) with Done cut to the units
	// whose result is on disk (stored), the rest counted in Running, the
	// units in flight, which snapshot reports as Sent; once the job is
	// terminal, terminalProgress. So a unit a client saw done survives a
	// crash of the server.
	progress api.Progress
	core     api.Progress
	stored   int
	// settled are the units whose result was accepted (done or failed),
	// and pendingOut the outputs of those whose record is not yet on disk,
	// by index; both nil once the job is terminal (every record is on
	// disk).
	settled    *unitSet
	pendingOut map[int][32]byte
	perWorker  map[string]int // accepted units by worker
	notify     chan struct{}  // closed at the next change; nil while nobody watches
}

func newJobRun(id string, spec api.JobSpec, n int, now time.Time) *jobRun {
	return &jobRun{id: id, spec: spec, state: api.JobQueued, receivedAt: now,
		settled: newUnitSet(n), pendingOut: map[int][32]byte{}, perWorker: map[string]int{},
		progress: api.Progress{Total: n, Pending: n}}
}

// runningLocked reports whether the job's units may still change: their
// records are not all on disk. Call with mu held.
func (j *jobRun) runningLocked() bool { return j.settled != nil }

// unitInput is unit i's input bytes; a job of many inputs reads it from
// the store.
func (s *Server) unitInput(j *jobRun, i int) ([]byte, error) {
	switch {
	case j.tiles != nil:
		return j.tiles[i].Data, nil
	case j.inputs != nil:
		if b, ok := j.ahead.take(i); ok {
			return b, nil
		}
		b, err := store.ReadAll(s.ctx, s.store, statedb.HexID(j.inputs[i]), maxUnitInput)
		if err != nil {
			return nil, fmt.Errorf("reading its input %s: %w", statedb.HexID(j.inputs[i]), err)
		}
		return b, nil
	}
	return j.input, nil
}

// inputSizeLocked is unit i's input size where known before it is sent,
// else 0. Call with mu held.
func (j *jobRun) inputSizeLocked(i int) int64 {
	switch {
	case j.tiles != nil:
		return int64(len(j.tiles[i].Data))
	case j.inputSizes != nil:
		return j.inputSizes[i]
	case j.inputs == nil:
		return int64(len(j.input))
	}
	return 0
}

// alike reports whether the job's units are alike to the scheduler: the
// same operation on inputs of the same size, none waiting for another
// job's outputs (a repeat job of one input).
func (j *jobRun) alike() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.tiles == nil && j.inputSizes == nil && j.inputs == nil && j.spec.InputJob == ""
}

// total is the job's number of units.
func (j *jobRun) total() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.progress.Total
}

// publishLocked sets progress from core and stored. Call with mu held,
// while the job runs.
func (j *jobRun) publishLocked() {
	p := j.core
	if shown := min(p.Done, j.stored); shown < p.Done {
		p.Running += p.Done - shown
		p.Done = shown
	}
	j.progress = p
}

// storedOne counts done unit i, whose record committed (the writer's
// after).
func (j *jobRun) storedOne(i int, err error) {
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stored++
	delete(j.pendingOut, i)
	if j.settled != nil && !isTerminal(j.state) {
		j.publishLocked()
		j.changed()
	}
}

// changed wakes everyone waiting on the job. Call with mu held.
func (j *jobRun) changed() {
	if j.notify != nil { // else nobody watches: no channel per unit
		close(j.notify)
		j.notify = nil
	}
}

// watch returns a channel closed at the job's next change, and whether the
// job is already terminal.
func (j *jobRun) watch() (<-chan struct{}, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.notify == nil {
		j.notify = make(chan struct{})
	}
	return j.notify, isTerminal(j.state)
}

// finished reports whether clients see the job in a terminal state.
func (j *jobRun) finished() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return isTerminal(j.state)
}

func isTerminal(state string) bool {
	return state == api.JobDone || state == api.JobFailed || state == api.JobCancelled
}

// snapshot returns the job's status, without units.
func (j *jobRun) snapshot() api.Job { return j.status(true) }

// status returns the job's status, without units, and with its count of
// units by worker if perWorker (a map as large as the workers that ran
// the job: 10,000 entries, some 230 KB of JSON, on 10,000 workers).
func (j *jobRun) status(perWorker bool) api.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := api.Job{ID: j.id, Spec: j.spec, Owner: j.owner, State: j.state, Progress: j.progress,
		Waiting: j.waiting, Error: j.errText, Result: j.result, ReceivedAt: j.receivedAt}
	if perWorker {
		out.UnitsPerWorker = maps.Clone(j.perWorker)
	}
	if !isTerminal(j.state) {
		// How many of the units sent are running only the loop can say
		// (Server.withRunning).
		out.Progress.Sent, out.Progress.Running = j.progress.Running, 0
	}
	if perWorker && out.UnitsPerWorker == nil {
		out.UnitsPerWorker = map[string]int{}
	}
	if !j.finishedAt.IsZero() {
		t := j.finishedAt
		out.FinishedAt = &t
	}
	if !j.lastResult.IsZero() && j.progress.Done+j.progress.Failed == j.progress.Total {
		ms := float64(j.lastResult.Sub(j.receivedAt)) / float64(time.Millisecond)
		out.MakespanMS = ms
		out.AvgUnitMS = ms / float64(max(j.progress.Total, 1))
	}
	return out
}

// record is the job's state.db record with the given state; the caller
// holds no lock.
func (j *jobRun) record(state, errText, result string, finished time.Time) statedb.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	p := j.progress
	if j.core.Total > 0 {
		p = j.core // every accepted unit's record is queued before this one
	}
	rec := statedb.Job{ID: j.id, Spec: j.spec, Owner: j.owner, State: state, Error: errText, Result: result,
		ReceivedAt: j.receivedAt, Progress: p, PerWorker: maps.Clone(j.perWorker)}
	if isTerminal(state) {
		rec.Progress = terminalProgress(rec.Progress)
	}
	if !finished.IsZero() {
		rec.FinishedAt = &finished
	}
	if !j.lastResult.IsZero() {
		t := j.lastResult
		rec.LastResult = &t
	}
	return rec
}

// publish shows a terminal record, now on disk, to clients, and lets the
// unit statistics go from memory.
func (j *jobRun) publish(rec statedb.Job) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.state, j.errText, j.result, j.progress = rec.State, rec.Error, rec.Result, rec.Progress
	if rec.FinishedAt != nil {
		j.finishedAt = *rec.FinishedAt
	}
	j.waiting, j.settled, j.pendingOut, j.storedResult = "", nil, nil, ""
	j.changed()
}

// holdResult names result, just stored by assembly, until publish shows
// the record that names it.
func (j *jobRun) holdResult(result string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.storedResult = result
}

// restoredJob is a finished job read back from state.db.
func restoredJob(rec statedb.Job) *jobRun {
	j := &jobRun{id: rec.ID, spec: rec.Spec, owner: rec.Owner, end: rec.State, state: rec.State, errText: rec.Error, result: rec.Result,
		receivedAt: rec.ReceivedAt, progress: terminalProgress(rec.Progress), perWorker: rec.PerWorker}
	if rec.FinishedAt != nil {
		j.finishedAt = *rec.FinishedAt
	}
	if rec.LastResult != nil {
		j.lastResult = *rec.LastResult
	}
	return j
}

// terminalProgress is a finished job's final count: nothing is pending or
// in flight any more, and the units without a result are cancelled. (It
// also corrects records written before it existed, which kept the counts
// of the moment the job failed or was cancelled.)
func terminalProgress(p api.Progress) api.Progress {
	return api.Progress{Total: p.Total, Done: p.Done, Failed: p.Failed, Cancelled: max(p.Total-p.Done-p.Failed, 0)}
}

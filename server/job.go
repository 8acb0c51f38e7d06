package server

import (
	"fmt"
	"image"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
)

// jobRun is a job's runtime state. The dispatch loop is its only writer; mu
// guards the fields that HTTP handlers read (everything below mu).
type jobRun struct {
	id   string
	spec api.JobSpec
	// inputs[i] is unit i's input: the same slice for every unit of a
	// repeat job, a tile for a tiled job.
	inputs [][]byte
	params ops.Params // unit params (tiles add format=png)
	tiles  []ops.Tile
	format string // tiled jobs: the output format
	bounds image.Rectangle
	// assembling is set (by the loop) while the result is being built; the
	// job cannot be cancelled then.
	assembling bool

	mu         sync.Mutex
	state      string
	waiting    string
	errText    string
	result     string
	receivedAt time.Time
	lastResult time.Time
	finishedAt time.Time
	units      []api.UnitStat
	progress   api.Progress
	notify     chan struct{} // closed and replaced on every change
}

func newJobRun(id string, spec api.JobSpec, n int, now time.Time) *jobRun {
	j := &jobRun{id: id, spec: spec, state: api.JobQueued, receivedAt: now,
		units: make([]api.UnitStat, n), notify: make(chan struct{})}
	for i := range j.units {
		j.units[i] = api.UnitStat{Index: i, State: "pending"}
	}
	j.progress = api.Progress{Total: n, Pending: n}
	return j
}

// changed wakes everyone waiting on the job. Call with mu held.
func (j *jobRun) changed() {
	close(j.notify)
	j.notify = make(chan struct{})
}

// watch returns a channel closed at the job's next change, and whether the
// job is already terminal.
func (j *jobRun) watch() (<-chan struct{}, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.notify, isTerminal(j.state)
}

func isTerminal(state string) bool {
	return state == api.JobDone || state == api.JobFailed || state == api.JobCancelled
}

// snapshot returns the job's status; withUnits adds per-unit statistics.
func (j *jobRun) snapshot(withUnits bool) api.Job {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := api.Job{ID: j.id, Spec: j.spec, State: j.state, Progress: j.progress,
		Waiting: j.waiting, Error: j.errText, Result: j.result, ReceivedAt: j.receivedAt}
	if !j.finishedAt.IsZero() {
		t := j.finishedAt
		out.FinishedAt = &t
	}
	if !j.lastResult.IsZero() && j.progress.Done+j.progress.Failed == j.progress.Total {
		ms := float64(j.lastResult.Sub(j.receivedAt)) / float64(time.Millisecond)
		out.MakespanMS = ms
		out.AvgUnitMS = ms / float64(max(j.progress.Total, 1))
	}
	out.UnitsPerWorker = map[string]int{}
	for i := range j.units {
		if u := &j.units[i]; u.State == "done" || u.State == "failed" {
			out.UnitsPerWorker[u.Worker]++
		}
	}
	if withUnits {
		out.Units = append([]api.UnitStat(nil), j.units...)
	}
	return out
}

// parseTiles reads "RxC".
func parseTiles(s string) (rows, cols int, err error) {
	r, c, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		rows, err = strconv.Atoi(r)
		if err == nil {
			cols, err = strconv.Atoi(c)
		}
	}
	if !ok || err != nil || rows < 1 || cols < 1 || rows > 64 || cols > 64 {
		return 0, 0, fmt.Errorf("tiles %q: want RxC with R and C between 1 and 64, e.g. 2x3", s)
	}
	return rows, cols, nil
}

package server

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
)

// views are what the read-only pages the dashboard polls show of the
// dispatch loop's state: the workers (GET /v1/workers) and how many units
// of each job run now (api.Progress.Running, in GET /v1/jobs and a job's
// status). The loop publishes them; a page reads them without waiting for
// the loop, which during a big job is busy placing units (with 10,000
// workers a page waited seconds behind them).
//
// A worker's record is an api.Worker that the loop replaces whole and
// never changes once published, so a page shows each worker as it was at
// one moment of the loop, never a record torn between two; only its
// last_seen is read when the page is, from the roster (heartbeats do not
// go through the loop). What the loop changes on an event (a
// registration, an association up or down, a lease, a missed heartbeat)
// is published before the event's step of the loop ends, so a client
// that registered a worker lists it at once. The per-unit counts
// (units_done, busy_threads, in_flight_units) and the jobs' running
// counts are published every countsEvery: at most that old.
type views struct {
	mu      sync.RWMutex  // guards workers: the loop writes, pages read
	workers []*workerView // sorted by name: the workers list's order

	running atomic.Pointer[map[string]int] // by job id, as dispatcher.countRunning last counted
}

// workerView is one worker's entry in the views.
type workerView struct {
	name string
	rec  atomic.Pointer[workerRec] // never nil once listed; never changed, only replaced
}

// workerRec is a worker's published record.
type workerRec struct {
	api.Worker
	live *liveness // the signs of life of the process it shows
}

// insert lists v, which has a record.
func (vs *views) insert(v *workerView) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	k, _ := slices.BinarySearchFunc(vs.workers, v.name, byViewName)
	vs.workers = slices.Insert(vs.workers, k, v)
}

// remove unlists the worker name.
func (vs *views) remove(name string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if k, ok := slices.BinarySearchFunc(vs.workers, name, byViewName); ok {
		vs.workers = slices.Delete(vs.workers, k, k+1)
	}
}

func byViewName(v *workerView, name string) int {
	switch {
	case v.name < name:
		return -1
	case v.name > name:
		return 1
	}
	return 0
}

// workersPage returns the page of workers p asks for (paging.go) and the
// cursor of the next page ("" if this is the last).
func (vs *views) workersPage(p page) ([]api.Worker, string) {
	vs.mu.RLock()
	lo := searchAfter(len(vs.workers), func(i int) string { return vs.workers[i].name }, p.after)
	hi := min(lo+p.limit, len(vs.workers))
	listed := slices.Clone(vs.workers[lo:hi])
	next := ""
	if hi < len(vs.workers) {
		next = vs.workers[hi-1].name
	}
	vs.mu.RUnlock()
	out := make([]api.Worker, len(listed))
	now := time.Now()
	for i, v := range listed {
		rec := v.rec.Load()
		out[i] = rec.Worker
		out[i].LastSeen = rec.live.shownSeen(now)
	}
	return out, next
}

// runningOf is job id's running count as last published (0 if none was).
func (vs *views) runningOf(id string) int {
	if m := vs.running.Load(); m != nil {
		return (*m)[id]
	}
	return 0
}

// countsPerSecond bounds the workers whose counts the loop looks at in a
// second: every tick up to 1,000 workers, every second at 10,000.
const countsPerSecond = 10_000

// countsEvery is how often the loop publishes the counts for n workers.
func countsEvery(n int) time.Duration {
	return max(tickEvery, time.Duration(n)*time.Second/countsPerSecond)
}

// touch marks w's record to be published again at the end of the loop's
// step (on the loop).
func (d *dispatcher) touch(w *workerConn) {
	if !w.dirty {
		w.dirty = true
		d.dirty = append(d.dirty, w)
	}
}

// publishTouched publishes the records of the workers touched in this
// step (on the loop).
func (d *dispatcher) publishTouched() {
	for _, w := range d.dirty {
		w.dirty = false
		if w.view != nil {
			d.publish(w)
		}
	}
	clear(d.dirty)
	d.dirty = d.dirty[:0]
}

// publish replaces w's record with its state now (on the loop).
func (d *dispatcher) publish(w *workerConn) {
	w.view.rec.Store(&workerRec{Worker: d.workerStatus(w), live: w.live})
}

// list publishes w's first record and lists it (on the loop).
func (d *dispatcher) list(w *workerConn) {
	w.view = &workerView{name: w.info.Name}
	d.publish(w)
	d.views.insert(w.view)
}

// unlist takes w off the list (on the loop).
func (d *dispatcher) unlist(w *workerConn) {
	d.views.remove(w.info.Name)
	w.view = nil
}

// publishCounts publishes, every countsEvery, the records of the workers
// whose counts changed, and the jobs' running counts while jobs run (on
// the loop, from the tick).
func (d *dispatcher) publishCounts(now time.Time) {
	if now.Before(d.nextCounts) {
		return
	}
	d.nextCounts = now.Add(countsEvery(len(d.workers)))
	idle := len(d.jobs) == 0 && len(d.inflight) == 0
	if idle && d.countsShown {
		return // nothing ran since the counts were shown: none changed
	}
	d.countsShown = idle // this pass shows the last changes
	for _, w := range d.workers {
		shown := w.view.rec.Load()
		if len(w.flights) == 0 && shown.InFlightUnits == 0 && shown.BusyThreads == 0 && shown.UnitsDone == w.unitsDone {
			continue // idle, and shown so: the core need not be asked
		}
		if shown.UnitsDone != w.unitsDone || shown.InFlightUnits != d.core.InFlight(w.info.Name) ||
			shown.BusyThreads != d.core.BusyStreams(w.info.Name) {
			d.publish(w)
		}
	}
	if len(d.jobs) > 0 || len(*d.views.running.Load()) > 0 {
		running := d.countRunning()
		d.views.running.Store(&running)
	}
}

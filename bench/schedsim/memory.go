package schedsim

import (
	"fmt"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// Memory is what the core holds per unit of one job, from the Go heap in
// use (after a collection) against before the job was added.
type Memory struct {
	// Form is how the job was given: "listed" (JobAdded.Units, a Unit
	// each) or "repeat" (JobAdded.Repeat).
	Form    string `json:"form"`
	Units   int    `json:"units"`
	Workers int    `json:"workers"`
	// Running is per unit once the job is added and its first units are
	// placed (most still pending); Finished once every unit is accepted
	// and the job is done; Forgotten is what is left, in bytes (not per
	// unit), after Core.Forget.
	RunningBytesPerUnit  float64 `json:"running_bytes_per_unit"`
	FinishedBytesPerUnit float64 `json:"finished_bytes_per_unit"`
	ForgottenBytes       int64   `json:"forgotten_bytes"`
	// AddedBytesPerUnit is what the caller's JobAdded event itself takes,
	// per unit (garbage once the step returns).
	AddedBytesPerUnit float64 `json:"added_bytes_per_unit"`
}

func (m Memory) String() string {
	return fmt.Sprintf("memory, a %s job of %d units on %d workers: %.1f B/unit running, %.1f B/unit finished, %d B left after Forget (the JobAdded event: %.1f B/unit)",
		m.Form, m.Units, m.Workers, m.RunningBytesPerUnit, m.FinishedBytesPerUnit, m.ForgottenBytes, m.AddedBytesPerUnit)
}

// measureMemory adds a job of cfg.MemUnits units, in the given form, to a
// core with cfg.MemWorkers workers, runs it to the end (results in the
// order their units were sent) and reads the heap at each stage.
func measureMemory(cfg Config, form string) (Memory, error) {
	m := Memory{Form: form, Units: cfg.MemUnits, Workers: cfg.MemWorkers}
	d := &driver{core: scheduler.New(scheduler.Config{}), now: time.Unix(0, 0)}
	for _, w := range workers(cfg.MemWorkers, cfg.Streams) {
		if err := d.step(scheduler.WorkerUp{Worker: w.Name, Streams: w.Streams, Ops: []string{"op"}}); err != nil {
			return m, err
		}
	}
	d.flight = make([]scheduler.Assignment, 0, 2*cfg.MemWorkers*cfg.Streams*scheduler.DefaultMaxWindow)
	base := heapInuse()
	ev := jobAdded(cfg, "j", form)
	m.AddedBytesPerUnit = perUnit(heapInuse(), base, m.Units)
	if err := d.step(ev); err != nil {
		return m, err
	}
	// ev is garbage from here on: the core keeps what it needs.
	m.RunningBytesPerUnit = perUnit(heapInuse(), base, m.Units)
	for !d.done {
		if err := d.finishOldest(); err != nil {
			return m, err
		}
	}
	m.FinishedBytesPerUnit = perUnit(heapInuse(), base, m.Units)
	if !d.core.Forget("j") {
		return m, fmt.Errorf("the core did not forget the finished job")
	}
	m.ForgottenBytes = int64(heapInuse()) - int64(base)
	return m, nil
}

func perUnit(now, base uint64, units int) float64 {
	return (float64(now) - float64(base)) / float64(units)
}

// jobAdded is the event of a job of cfg.MemUnits no-op units.
func jobAdded(cfg Config, name, form string) scheduler.JobAdded {
	if form == "repeat" {
		return scheduler.JobAdded{Job: name, Policy: cfg.Policy, Repeat: scheduler.Repeat{Count: cfg.MemUnits, Op: "op"}}
	}
	units := make([]scheduler.Unit, cfg.MemUnits)
	for i := range units {
		units[i] = scheduler.Unit{Index: i, Op: "op"}
	}
	return scheduler.JobAdded{Job: name, Policy: cfg.Policy, Units: units}
}

// driver feeds a core results in the order their units were sent.
type driver struct {
	core   *scheduler.Core
	now    time.Time
	flight []scheduler.Assignment
	head   int
	done   bool
}

func (d *driver) step(ev scheduler.Event) error {
	d.now = d.now.Add(time.Microsecond)
	out, err := d.core.Step(d.now, ev)
	if err != nil {
		return err
	}
	if d.head > len(d.flight)/2 {
		d.flight = append(d.flight[:0], d.flight[d.head:]...)
		d.head = 0
	}
	d.flight = append(d.flight, out.Assign...)
	d.done = d.done || len(out.JobsDone) > 0
	return nil
}

func (d *driver) finishOldest() error {
	if d.head == len(d.flight) {
		return fmt.Errorf("nothing in flight and the job not done")
	}
	a := d.flight[d.head]
	d.head++
	return d.step(scheduler.UnitFinished{Job: a.Job, Unit: a.Unit, Worker: a.Worker, Stream: a.Stream,
		Attempt: a.Attempt, Compute: time.Millisecond})
}

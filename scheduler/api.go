package scheduler

import "time"

// Event is an input to the scheduler core. Every event is one of the types
// below.
type Event interface{ isEvent() }

// WorkerUp says an association to Worker is open with Streams streams; each
// stream is one slot that runs one unit at a time on the worker (the worker
// reserved one thread per stream). Ops lists the operations it can run.
// Threads is what the worker advertised (used by the "threads" policy; zero
// means Streams). A second WorkerUp for the same worker replaces the first
// (its in-flight units are requeued as by WorkerDown).
type WorkerUp struct {
	Worker  string
	Streams int
	Threads int
	Ops     []string
	// AwaitLease: none of the streams is usable until a WorkerLease says
	// how many are (a worker shared by several servers lends its threads by
	// demand). Without it all Streams are usable at once.
	AwaitLease bool
	// HoldBytes is how many bytes of unit inputs the worker says it can
	// hold at once (its memory for them); 0 if it does not say. See
	// "Byte budgets" in the package documentation.
	HoldBytes int64
}

// WorkerLease says the worker now lends the first Streams of its
// association's streams (0 to WorkerUp.Streams). Units already in flight on
// the others stay in flight and their results count as usual, but no unit
// is placed there, not even a speculative duplicate. Zero means the worker
// takes nothing new from this server for now.
type WorkerLease struct {
	Worker  string
	Streams int
}

// WorkerHold says the worker now says it can hold HoldBytes of unit
// inputs (WorkerUp.HoldBytes; 0: it does not say). Units already in flight
// stay; the new figure bounds what is placed from now on.
type WorkerHold struct {
	Worker    string
	HoldBytes int64
}

// WorkerDown says the worker's association is gone (lost, heartbeat timeout,
// deregistered). Its in-flight units go back to their job's queue.
type WorkerDown struct{ Worker string }

// JobAdded submits a job already split into units: listed one by one in
// Units, or, for a job of identical units, described by Repeat (then Units
// is empty). Policy is one of PolicyNames; Speculate turns on end-of-job
// speculation.
type JobAdded struct {
	Job       string
	Policy    string
	Speculate bool
	Units     []Unit
	Repeat    Repeat
}

// Repeat is a job of Count identical units, indexed 0 to Count-1: each
// runs Op on an input of Size bytes (0: unknown) and none depends on
// another, as in "N repetitions of op on object". Neither the event nor
// the core holds a record per unit: the core keeps about a byte a unit
// (its state), plus what it keeps for each unit in flight, so a job of
// a hundred million units fits in memory. A job, listed or repeated, has
// at most 2^31-2 units.
type Repeat struct {
	Count int
	Op    string
	Size  int64
	// Done are the units accepted before a restart (as Unit.Done), as
	// ascending, disjoint spans.
	Done []Span
}

// Span is the unit indexes From to To-1.
type Span struct{ From, To int }

// Unit is one computation unit of a job. Index is its position in the job
// (0..n-1); Deps are indexes of units that must finish first.
type Unit struct {
	Index int
	Op    string
	Deps  []int
	// Done marks a unit whose result was accepted before the core was
	// built (a server restart resuming the job): it is never placed, counts
	// as done in Progress, and satisfies its dependents. A job whose units
	// are all Done is in the JobsDone of the JobAdded step.
	Done bool
	// Held keeps the unit from being placed until a UnitsReleased names
	// it: its input does not exist yet (it is another job's output).
	Held bool
	// Size is the unit's input in bytes, 0 if unknown; it counts against
	// a worker's byte budget while the unit is in flight there.
	Size int64
}

// UnitsReleased makes held units of Job placeable (once their Deps are
// accepted too). Units not held are ignored.
type UnitsReleased struct {
	Job   string
	Units []int
	// Sizes, if as long as Units, are their input sizes (Unit.Size).
	Sizes []int64
}

// JobCancelled drops a job's pending units; results still in flight are
// reported as Dropped when they arrive.
type JobCancelled struct{ Job string }

// UnitFinished reports a result that came back from Worker on Stream.
// Failed means the operation itself failed (bad input): the unit is final and
// is not retried. Queued and Compute are the worker's own timings.
type UnitFinished struct {
	Job     string
	Unit    int
	Worker  string
	Stream  int
	Failed  bool
	Queued  time.Duration
	Compute time.Duration
	// Attempt echoes Assignment.Attempt. When set, a result only matches
	// the copy sent with that attempt, so a late result from a worker's
	// previous association is dropped even if the unit was sent to the
	// same worker stream again. Zero matches any copy on Worker/Stream.
	Attempt int
}

// UnitReturned says the worker handed back a unit it was sent without
// running it (it is shutting down). That copy stops counting against the
// stream's window and, unless another copy is in flight, the unit is
// pending again: it is placed anew (as the next Attempt), not failed.
// A return that matches no copy in flight is ignored.
type UnitReturned struct {
	Job     string
	Unit    int
	Worker  string
	Stream  int
	Attempt int // as in UnitFinished: zero matches any copy on Worker/Stream
}

// Feedback is the worker's report of its load (seed 003, Banerjee et al.;
// docs/seeds.md lists the seed papers): queue depth and
// measured service rate in units per second, with the transit of the unit
// whose result carried it. The core shrinks or grows the worker's
// per-stream window from it ("Flow control" in the package doc).
type Feedback struct {
	Worker      string
	QueueDepth  int
	ServiceRate float64
	// Transit is the unit's time outside the worker's queue and threads:
	// from the server sending it to its result arriving, less the time it
	// waited in the worker's queue and ran. 0: not measured.
	Transit time.Duration
}

func (WorkerUp) isEvent()      {}
func (WorkerLease) isEvent()   {}
func (WorkerHold) isEvent()    {}
func (WorkerDown) isEvent()    {}
func (JobAdded) isEvent()      {}
func (JobCancelled) isEvent()  {}
func (UnitFinished) isEvent()  {}
func (UnitReturned) isEvent()  {}
func (Feedback) isEvent()      {}
func (UnitsReleased) isEvent() {}

// Assignment tells the caller to send unit (Job, Unit) on Worker's Stream.
type Assignment struct {
	Job         string
	Unit        int
	Worker      string
	Stream      int
	Attempt     int  // 1 for the first send, more after requeues and speculation
	Speculative bool // a duplicate of a unit still running elsewhere
}

// Output is what one Step produced. The caller acts on it in order: send
// Assign, record Accepted, discard Dropped, announce JobsDone.
type Output struct {
	Assign []Assignment
	// Accepted are results counted for their job: the first result of each
	// unit. Each unit appears here at most once over the life of the job.
	Accepted []UnitFinished
	// Dropped are results not counted: duplicates from speculation, results
	// for cancelled jobs or from a worker after it was declared down.
	Dropped []UnitFinished
	// JobsDone lists jobs all of whose units are accepted (including failed
	// ones), or that were cancelled.
	JobsDone []string
}

// JobProgress is the core's view of one job.
type JobProgress struct {
	Total, Done, Running, Failed, Pending int
	// Waiting is non-empty when pending units cannot be placed because no
	// worker that is up can run their operation; it says which.
	Waiting string
}

// Config tunes the core. Zero values mean the documented defaults.
type Config struct {
	// Window is the initial number of units in flight per stream (default
	// 2: one running, one queued on the worker to hide the round trip).
	Window int
	// MaxWindow caps the window feedback may grow to (default 32: see
	// "Flow control" in the package doc).
	MaxWindow int
	// SpeculateAfter: a running unit is a straggler once it has been out
	// this many times the job's median unit compute time, plus twice its
	// median time on the network (default 1.0).
	SpeculateAfter float64
	// ByteHorizon is how much of a measured worker's work, in time, its
	// byte budget keeps in flight (default 1s); negative: no budget from
	// the service rate, only a worker's HoldBytes. See "Byte budgets".
	ByteHorizon time.Duration
}

// PolicyNames lists the assignment policies New understands.
var PolicyNames = []string{"equal", "threads", "speed", "dynamic"}

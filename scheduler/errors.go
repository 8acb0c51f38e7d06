package scheduler

import "errors"

// Errors returned by Step. They are wrapped with details; test with
// errors.Is. After any of them the core is unchanged.
var (
	// ErrUnknownPolicy: JobAdded.Policy is not one of PolicyNames.
	ErrUnknownPolicy = errors.New("scheduler: unknown policy")
	// ErrDuplicateJob: a job with that name was already added.
	ErrDuplicateJob = errors.New("scheduler: duplicate job")
	// ErrUnknownJob: JobCancelled names a job the core never saw.
	ErrUnknownJob = errors.New("scheduler: unknown job")
	// ErrBadUnit: a unit's index or dependency is out of range or
	// repeated, or its operation is empty, or the job has no units.
	ErrBadUnit = errors.New("scheduler: bad unit")
	// ErrDepCycle: the units' dependencies form a cycle.
	ErrDepCycle = errors.New("scheduler: dependency cycle")
	// ErrBadWorker: WorkerUp without a name, streams or operations.
	ErrBadWorker = errors.New("scheduler: bad worker")
	// ErrUnknownWorker: WorkerDown or Feedback for a worker that is not up.
	ErrUnknownWorker = errors.New("scheduler: unknown worker")
	// ErrUnknownEvent: an Event of a type the core does not handle.
	ErrUnknownEvent = errors.New("scheduler: unknown event")
)

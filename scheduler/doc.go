// Package scheduler is braid's deterministic scheduling core: events and the
// clock go in, assignments come out, and it does no I/O.
//
// A Core is owned by one goroutine (the server's dispatch loop), which feeds
// it events with Step(now, ev), calls Tick(now) on a timer, and acts on each
// Output in order: send Assign, record Accepted, discard Dropped, announce
// JobsDone. The core reads no clock, draws no random numbers and never
// depends on map order, so it is tested with traces (testdata/*.trace) and
// with the simulator in package schedsim.
//
//	func New(cfg Config) *Core
//	func (c *Core) Step(now time.Time, ev Event) (Output, error)
//	func (c *Core) Tick(now time.Time) Output           // speculation timers
//	func (c *Core) Progress(job string) (JobProgress, bool)
//	func (c *Core) Demand(worker string) int           // streams this server could use
//	func (c *Core) Workers() []WorkerStatus            // introspection
//	func (c *Core) InFlight(worker string) int         // units sent, not answered
//	func (c *Core) BusyStreams(worker string) int      // streams holding one
//	func (c *Core) Worker(name string) (WorkerStatus, bool)
//	func (c *Core) Jobs() []string
//	func (c *Core) Forget(job string) bool             // drop a finished job
//
// Step returns an error for an invalid event (unknown policy, duplicate job,
// unit index or dependency out of range, dependency cycle, bad WorkerUp,
// WorkerDown, WorkerHold or Feedback for a worker that is not up, cancel of an unknown
// job; see the Err variables) and then changes nothing. A result is never
// an error: one the core cannot count is Dropped.
//
// # Placement
//
// A slot is a (worker, stream) pair. Each stream has a window of units in
// flight (Config.Window, default 2: one running, one queued on the worker).
// Jobs are served FIFO by arrival: an earlier job's placeable units go
// first, in index order; a unit is placeable when it is pending and all its
// Deps are accepted, and goes only to an up worker whose Ops include its Op
// (an Op of names joined by '+' needs them all: a pipeline's).
// Among allowed workers with window room the core picks the one whose
// freest stream is least loaded, then the faster, then by name. When no up
// worker can run a pending unit's operation, Progress says so in Waiting.
//
// # Policies
//
// Splitting a job into units happens before the core, in the server
// (ops.SplitTiles cuts a tiled job's image). A job of identical,
// independent units (N repetitions of an operation on one input) can be
// given as JobAdded.Repeat instead of a list: it is placed the same way.
// Assignment is a policy, one per file behind the policy interface:
//
//   - equal: each capable worker up when the first unit of an operation is
//     placed gets the same share of that operation's units, computed once;
//     rounding leftovers go to the first workers by name.
//   - threads: shares proportional to advertised Threads.
//   - speed: shares proportional to each worker's service rate, learned
//     from UnitFinished.Compute (a moving average) and Feedback.ServiceRate
//     (which wins when present); threads before anything is measured. The
//     unsent part of the shares is re-planned when estimates move a share by
//     two units or more.
//   - dynamic: no shares; a pipeline in which any stream with window room
//     takes the next pending unit.
//
// Static shares say how many units each worker gets; within a worker the
// units go to whichever stream has room. Shares are only a plan: a worker
// that goes down gives its unsent share and its in-flight units to the
// job's common pool, which any capable worker drains once its own share is
// used. A worker joining mid-job gets no share of already planned jobs (it
// may drain the pool); under dynamic it simply pulls work.
//
// # Speculation
//
// With JobAdded.Speculate, once a job has no pending unit, Tick duplicates
// straggling units onto idle streams (nothing in flight) of other capable
// workers: a copy in flight for SpeculateAfter times the job's median
// compute time plus twice its median time on the network (a duplicate
// moves the unit's bytes again), or one a measured idle worker would
// finish before the copy's expected finish. At most one duplicate per
// unit, never onto a worker known to be slower. The first result is Accepted; the other is
// Dropped when it arrives, and its slot is freed then. Speculation is only
// decided in Tick, so that a burst of results at one instant is seen whole.
//
// # Leases
//
// A worker registered with several servers lends its threads to them by
// demand (docs/leases.md). WorkerUp with AwaitLease makes its streams
// unusable until a WorkerLease says how many of the first streams are
// lent; a later WorkerLease grows or shrinks that number. Shrinking
// recalls nothing: units in flight on streams no longer lent finish there
// and their results count. Demand tells the owner how many streams it
// could keep busy, which is what it asks the worker for. A worker that
// shuts down hands back units it has not started (UnitReturned): they are
// pending again and are placed anew, never failed.
//
// # Resuming
//
// JobAdded units with Done set (for a Repeat job, its Done spans) were
// accepted before a restart: they are not placed, count as done, and
// release their dependents.
//
// # Flow control
//
// A Feedback whose QueueDepth exceeds streams×window shrinks the worker's
// window to 1; an empty queue grows it by one, up to MaxWindow. Units
// already in flight are never recalled.
//
// An empty queue means the worker ran dry and waited for input. On a long
// path that is the window's doing: a stream with a window of w units gets
// w units a round trip, which at 100 ms and 19 KiB units is 3 Mbit/s a
// stream. So the window grows until the worker has some queued, up to a
// MaxWindow of 32 by default (a bound of 4 held a job of small units over a
// 100 ms path to under a third of what 32 ran). The byte budget below still
// bounds the bytes those windows may hold.
//
// But a worker also runs dry when what feeds it is slow: a link already
// full, or a transport whose CPU is the limit on a short path. More units
// in flight then only wait on the way, longer each. So the window does not
// grow on a result whose unit's Transit (its time outside the worker's
// queue and threads) exceeds the worker's floor by a quarter, at least
// TransitSlack: the way the transports' stripe tuners read a standing
// queue. The floor is the least Transit of the last one to two
// TransitPeriods, so that it follows a path that changed, or units of
// another size. (Without this, 19 KiB units on a 1 ms path ran no faster
// with windows of up to 32, and their p99 latency rose from about 50 ms to
// 260-390 ms. Shrinking the window by one on such a result was tried too:
// it undid the gain on long paths and cost 20% at 20 ms.) A worker's queue
// holds at most 4 units a thread, so the deep-queue rule shrinks only
// windows below 4; a larger one stays until the worker reconnects.
//
// # Byte budgets
//
// Windows count units, but for data-intensive work what a worker must
// absorb is bytes (seed 003, Banerjee et al., in docs/seeds.md: the
// receiver's end system, its memory, disk and CPU, can be the bottleneck). Every unit may carry its input Size,
// and a worker holds its in-flight copies' bytes against a budget: once
// the budget is spent it has no room, whatever its windows say, though a
// worker with nothing in flight always takes one unit. The budget is what
// the worker can get through in ByteHorizon at the rate its last results
// came (units per second, not from compute times, which leave out moving
// the bytes; times the mean size of the units sent to it), but at least
// one unit per leased stream plus one, so that no stream waits for input
// (and only that until four results have come: it opens as a TCP window
// does in slow start); and it is never more than the worker says its
// memory can hold (WorkerUp.HoldBytes, or a later WorkerHold's). Units of unknown size are bounded by windows
// alone until their owner tells their size (SetSize, once it has read the
// input to send it).
//
// # Cost
//
// The core's work per unit does not grow with the number of workers or
// with the size of jobs. For each operation of the live jobs it keeps the
// up workers that can run it ranked (index.go) by the keys placement
// compares, and re-ranks a worker, in O(log workers), when what it has in
// flight, its lease, window, byte budget or speed changes; static shares
// rank their holders likewise. So a UnitFinished step costs O(log workers)
// plus O(log units) per unit placed, and dispatch visits only the jobs
// with placeable units. A query passes over no worker whose byte budget
// the unit does not fit while an operation's units are of one size: the
// rankings a query walks hold only the workers that the least unit size
// asked of the operation fits. With sizes mixed, it passes over no more
// such workers than there are workers the unit fits, since it also walks
// those by spare bytes (find.go). A unit that fits no worker reserves the
// rest of the pass in O(1) (reserve.go). Demand is O(operations the
// worker runs), Progress O(1) (its Waiting text is cached until a worker
// comes up or goes down, or an operation of the job gains or runs out of
// pending units), and Tick's speculation looks only at the units in flight
// of jobs some worker could take a copy of. The speed policy re-plans a
// job whose shares have h holders once every h/16 estimate changes (every
// change below 32 holders), since a plan costs O(h log h). The medians
// behind speculation are exact over a job's first 32,768 results, then
// within 1/64.
//
// Memory: a job of Repeat units is a byte a unit (its state); one of
// listed units adds a column for what its units differ in (operation,
// size, dependencies, holds); a unit sent has a record until it is final
// and every copy is back. Forget drops a job. BenchmarkSteadyState
// measures one result and Progress call on a busy core, BenchmarkWorkers
// the same against the number of workers, and `braid bench schedsim`
// (docs/experiments/schedsim) the core alone at up to 100,000 workers and
// 100 million units.
//
// # Exactly once
//
// Each unit is Accepted at most once. Dropped are results for unknown or
// cancelled jobs, for unknown units, for a copy no longer in flight (the
// worker was declared down, or replaced by a second WorkerUp, and the unit
// requeued with Attempt+1), with a stale UnitFinished.Attempt, or for a
// unit already accepted. Failed results are final: not retried, counted in
// Progress.Failed; units that depend on a failed unit fail with it and are
// reported as Accepted with Failed set and no Worker. JobCancelled puts the
// job in JobsDone at once; its pending units are never sent.
package scheduler

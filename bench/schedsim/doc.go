// Package schedsim measures braid's scheduling core alone at scale: the
// instrument behind `braid bench schedsim`.
//
// Run sweeps the number of workers (10 to 100,000 by default): at each
// size it builds workers of mixed speeds (1 to 4 ms a unit, one stream
// each; one in ten runs another operation, and must get nothing), gives
// the core one job of Config.Units identical units (a JobAdded.Repeat)
// and drives it to the end in the virtual-time simulator of package
// scheduler/schedsim, which checks the core's promises as it goes (every
// unit accepted exactly once, no unit to a worker that cannot run it,
// windows respected). It reports the core's assignments per second of its
// own CPU time (Point.CoreSeconds: the simulator's bookkeeping left out),
// the whole process's allocations per unit and its peak heap.
//
// It also measures the memory the core holds per unit (Memory): the heap in
// use after a job of Config.MemUnits units is added, after it has run to
// the end, and after the job is forgotten, against before; for a job of
// listed units and for a repeat job.
//
// Time is virtual, so the figures are CPU cost, not a makespan. They are
// trusted for how the cost grows with the number of workers and units
// (the sweep's shape) and, being CPU time, on a machine shared with other
// work; not below about 10% (the estimate of the core's share, and caches
// shared with other processes). Each point stops at Config.Budget of wall
// time and reports what it did. The thread's CPU time is read on Linux
// only; elsewhere the core's time is its wall time.
package schedsim

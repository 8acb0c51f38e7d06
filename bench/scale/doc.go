// Package scale is the engine behind `braid bench scale`: how one braid
// server holds up under thousands of workers and a job of a million units,
// measured through the real server.
//
// Run starts `braid server` as a child process (so that its CPU time,
// resident memory and open files are its own, read from /proc), then hosts
// Config.Workers simulated workers in this process. Each is a real client
// of the server: it registers over HTTP with its own name and the cluster's
// worker token, heartbeats at the interval the server asks for, listens on
// a data-plane endpoint of its own (Config.Transport, tcpn by default) for
// the server's association, lends the server all its threads (a lone
// server's lease, docs/leases.md) and answers every unit at once (a no-op
// that echoes its input) or after Config.Compute. The simulated workers are
// light: one listener and a reader goroutine per stream, one heartbeat
// goroutine each, and one HTTP client pool for all, so that 10,000 of them
// fit one process on two cores.
//
// Once every worker's association is up, Run submits one repeat job of
// Config.Units units of Config.UnitBytes each, polls the paged worker and
// job lists while it runs (their latency is the API figure) from a process
// of its own at the server's nice (pollproc.go), samples the
// server's heap (its /debug/vars), and reports what Result lists. With
// Config.Restart it kills the server with SIGKILL part-way through the job,
// starts it again on the same data directory and checks that the job
// resumes and finishes with every unit counted once.
//
// The figures are trusted for the server's cost as the number of workers
// and units grows. The simulated workers share the machine's cores with the
// server, so units/s on a two-core machine is a floor for what the server
// does alone; the bench says how much CPU it took itself. By default the
// server runs at nice -10 (Config.ServerNice, priority.go), so that it has
// the CPU before the fleet, as it would with the workers on other machines.
// A simulated worker answers the units it has received together and sends
// their results as one batch (transport.SendBatch), as the server sends a
// worker the units it places on it together.
package scale

// Package chaos is braid's fault-injection instrument: it runs a real
// cluster — a server and three workers, each a separate braid process, each
// worker reached through a relay that can black-hole its data plane — keeps
// it busy with repeat and tiled jobs, and injects a seeded schedule of
// faults:
//
//   - kill -9 of a worker, restarted a little later under the same name;
//   - SIGSTOP of a worker, SIGCONT some seconds later;
//   - SIGTERM of a worker (a graceful stop: it hands back its queued
//     units), restarted a little after it exits;
//   - kill -9 of the server, restarted on the same data directory and port;
//   - SIGTERM of the server (a graceful stop: it drains), restarted the
//     same way;
//   - a black-holed link between the server and a worker (the relay drops
//     everything both ways; the control plane still works, so only the
//     association's own liveness can notice).
//
// When the faults stop it checks the invariants a user relies on: every
// accepted job ends done; each unit has exactly one output; every output is
// byte-equal to a fault-free computation of the same unit (computed here,
// with package ops); no worker thread is leaked (an idle worker runs
// nothing, and one busy server gets every worker's every thread); no job
// waits forever. It reports the faults injected, the units sent more than
// once, and the slowest detection (fault to the server seeing the worker
// go) and recovery (end of the fault to the worker being up again).
//
// The same seed gives the same schedule (Plan); what the cluster does with
// it depends on timing. `braid bench chaos` runs the long form; the e2e
// tests run a short seed on the default transport.
package chaos

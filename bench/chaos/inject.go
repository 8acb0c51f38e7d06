package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/transport"
)

// outcome is what one fault did.
type outcome struct {
	fault      Fault
	stuck      bool          // a graceful stop that did not end within its bound
	detected   time.Duration // fault start to the server seeing the worker go; 0 if it did not
	recovered  time.Duration // fault end to the worker (or every worker) up again, once its loss was noticed
	unnoticed  bool          // lasted well past the bound that applied (see bound), and never noticed
	bound      time.Duration // that bound
	unrecovery bool          // not up again within the recovery bound
	// overtaken: a server fault began before the server noticed this worker
	// fault, so what it saw was the server going, not the worker
	overtaken bool
}

// injector applies faults to a cluster and measures them.
type injector struct {
	c   *cluster
	o   *observer
	cfg *Config

	// serverFaults counts the server faults begun, so that a worker fault
	// can tell its own detection from a server stop's.
	serverFaults atomic.Int64

	mu  sync.Mutex // guards out
	out []outcome
}

// recoverWithin bounds the wait for a worker (or the server's workers) to
// be up again after a fault.
const recoverWithin = 60 * time.Second

// apply runs one fault from start to end and records its outcome.
func (in *injector) apply(ctx context.Context, f Fault) {
	fmt.Fprintf(in.cfg.Log, "fault   %v\n", f)
	res := outcome{fault: f}
	if f.Kind.onServer() {
		res.recovered, res.unrecovery, res.stuck = in.serverFault(ctx, f)
	} else {
		res = in.workerFault(ctx, f)
	}
	switch {
	case res.overtaken:
		fmt.Fprintf(in.cfg.Log, "result  %v: overtaken by a server fault before it was noticed\n", f)
	case f.Kind.onServer():
		fmt.Fprintf(in.cfg.Log, "result  %v: recovered %v\n", f, res.recovered.Round(time.Millisecond))
	default:
		fmt.Fprintf(in.cfg.Log, "result  %v: detected %v, recovered %v\n", f, res.detected.Round(time.Millisecond), res.recovered.Round(time.Millisecond))
	}
	in.mu.Lock()
	in.out = append(in.out, res)
	in.mu.Unlock()
}

// workerFault starts f, watches for the server to notice while it lasts
// (and a little after: a short fault may still be noticed), ends it, and
// measures the recovery.
func (in *injector) workerFault(ctx context.Context, f Fault) outcome {
	res := outcome{fault: f}
	name, w := in.c.names[f.Worker], in.c.workers[f.Worker]
	bound := in.bound(name)
	start := time.Now()
	switch f.Kind {
	case KillWorker:
		w.kill()
	case TermWorker:
		w.signal(syscall.SIGTERM)
	case StopWorker:
		w.signal(syscall.SIGSTOP)
	case BlackHole:
		in.c.relays[f.Worker].Block(true)
	}
	gone := make(chan time.Duration, 1)
	watch, stopWatch := context.WithTimeout(ctx, f.For+in.cfg.Liveness+2*time.Second)
	defer stopWatch()
	serverFaults := in.serverFaults.Load()
	go func() {
		if at, ok := in.o.waitFor(watch, func(v map[string]api.Worker) bool { return !up(v, name) }); ok {
			if in.serverFaults.Load() != serverFaults {
				gone <- -1 // the server went first
			} else {
				gone <- at.Sub(start)
			}
		}
		close(gone)
	}()
	if f.Kind == TermWorker { // the fault lasts For after the stop ended
		if res.stuck = !w.waitExit(drainTimeout + stopSlack); res.stuck {
			w.kill()
		}
	}
	sleep(ctx, f.For)
	end := time.Now()
	switch f.Kind {
	case KillWorker, TermWorker:
		_ = w.start()
	case StopWorker:
		w.signal(syscall.SIGCONT)
	case BlackHole:
		in.c.relays[f.Worker].Block(false)
	}
	res.detected = <-gone
	if res.overtaken = res.detected < 0; res.overtaken {
		res.detected = 0
		return res // the server fault measures its own recovery
	}
	res.bound = bound
	res.unnoticed = res.detected == 0 && f.For > bound+2*time.Second
	if res.detected == 0 {
		return res // nothing to recover from
	}
	wctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	if at, ok := in.o.waitFor(wctx, func(v map[string]api.Worker) bool { return up(v, name) }); ok {
		res.recovered = max(at.Sub(end), 0)
	} else {
		res.unrecovery = ctx.Err() == nil
	}
	return res
}

// bound is how long the server may take to notice that worker name went
// silent now: the liveness bound while it holds units, and the idle bound
// (transport.DefaultIdleFactor liveness bounds, on the TCP transports)
// while it may hold none, since an association with nothing under way is
// watched with that (transport/internal/mux/liveness.go). Its heartbeats
// may notice sooner.
func (in *injector) bound(name string) time.Duration {
	switch in.cfg.Transport {
	case "tcp", "tcpn", "ptcp":
	default:
		return in.cfg.Liveness
	}
	if in.o.busy(name) {
		return in.cfg.Liveness
	}
	return transport.DefaultIdleFactor * in.cfg.Liveness
}

// serverFault kills the server (or stops it gracefully, and waits for it
// to exit), restarts it after f.For on the same data directory and port,
// and measures the time until every worker is up on the new one.
func (in *injector) serverFault(ctx context.Context, f Fault) (recovered time.Duration, unrecovered, stuck bool) {
	in.serverFaults.Add(1)
	if f.Kind == KillServer {
		in.c.server.kill()
	} else {
		in.c.server.signal(syscall.SIGTERM)
		if stuck = !in.c.server.waitExit(drainTimeout + stopSlack); stuck {
			in.c.server.kill()
		}
	}
	sleep(ctx, f.For)
	restarted := time.Now()
	if err := in.c.server.start(); err != nil {
		fmt.Fprintf(in.cfg.Log, "restarting the server: %v\n", err)
		return 0, true, stuck
	}
	wctx, cancel := context.WithTimeout(ctx, recoverWithin)
	defer cancel()
	if at, ok := in.o.waitFor(wctx, func(v map[string]api.Worker) bool { return allUp(v, in.c.names) }); ok {
		return at.Sub(restarted), false, stuck
	}
	return 0, ctx.Err() == nil, stuck
}

func (in *injector) outcomes() []outcome {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]outcome(nil), in.out...)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// afterPoll is a short pause between retries of a failed call.
func afterPoll() <-chan time.Time { return time.After(4 * pollEvery) }

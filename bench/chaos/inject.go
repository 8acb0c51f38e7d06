package chaos

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/braidhq/braid/api"
)

// outcome is what one fault did.
type outcome struct {
	fault      Fault
	stuck      bool          // a graceful stop that did not end within its bound
	detected   time.Duration // fault start to the server seeing the worker go; 0 if it did not
	recovered  time.Duration // fault end to the worker (or every worker) up again, once its loss was noticed
	unnoticed  bool          // lasted well past the liveness bound, and never noticed
	unrecovery bool          // not up again within the recovery bound
}

// injector applies faults to a cluster and measures them.
type injector struct {
	c   *cluster
	o   *observer
	cfg *Config

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
	fmt.Fprintf(in.cfg.Log, "result  %v: detected %v, recovered %v\n", f, res.detected.Round(time.Millisecond), res.recovered.Round(time.Millisecond))
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
	go func() {
		if at, ok := in.o.waitFor(watch, func(v map[string]api.Worker) bool { return !up(v, name) }); ok {
			gone <- at.Sub(start)
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
	res.unnoticed = res.detected == 0 && f.For > in.cfg.Liveness+2*time.Second
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

// serverFault kills the server (or stops it gracefully, and waits for it
// to exit), restarts it after f.For on the same data directory and port,
// and measures the time until every worker is up on the new one.
func (in *injector) serverFault(ctx context.Context, f Fault) (recovered time.Duration, unrecovered, stuck bool) {
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

package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// FaultKind is one kind of fault.
type FaultKind string

// The kinds of fault.
const (
	KillWorker FaultKind = "kill-worker" // SIGKILL, then a restart after For
	StopWorker FaultKind = "stop-worker" // SIGSTOP, then SIGCONT after For
	KillServer FaultKind = "kill-server" // SIGKILL, then a restart after For
	BlackHole  FaultKind = "black-hole"  // the worker's link drops everything for For
	TermWorker FaultKind = "term-worker" // SIGTERM (a graceful stop), then a restart For after it exits
	TermServer FaultKind = "term-server" // SIGTERM (a graceful stop), then a restart For after it exits
)

// onServer reports whether k strikes the server.
func (k FaultKind) onServer() bool { return k == KillServer || k == TermServer }

// Fault is one scheduled fault.
type Fault struct {
	At     time.Duration // since the start of the schedule
	Kind   FaultKind
	Worker int           // index of the worker, for worker faults
	For    time.Duration // how long the fault lasts
}

func (f Fault) String() string {
	target := "server"
	if !f.Kind.onServer() {
		target = fmt.Sprintf("w%d", f.Worker+1)
	}
	return fmt.Sprintf("%8v %-11s %s for %v", f.At.Round(time.Millisecond), f.Kind, target, f.For.Round(time.Millisecond))
}

// Plan draws the schedule of faults for seed over duration: a fault every
// 2–5 s, never two at once on the same target, a server fault never beside
// another fault, and at most one server fault in any 10 s. The first six
// are one of each kind, in an order the seed picks, so that even a short
// run tries them all. A graceful stop is given its target's whole
// attention for For plus stopAllowance (its drain). Plan is a pure
// function of its arguments.
func Plan(seed uint64, duration time.Duration, workers int) []Fault {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	first := []FaultKind{KillWorker, StopWorker, BlackHole, KillServer, TermWorker, TermServer}
	rng.Shuffle(len(first), func(i, j int) { first[i], first[j] = first[j], first[i] })
	busyUntil := make([]time.Duration, workers+1) // per worker, and the server last
	var out []Fault
	lastServer := -10 * time.Second
	for at := 2 * time.Second; ; at += between(rng, 2*time.Second, 5*time.Second) {
		f, tour := draw(rng, at, workers), len(out) < len(first)
		if tour {
			f = drawKind(rng, at, workers, first[len(out)])
		}
		if f.Kind.onServer() && at-lastServer < 10*time.Second {
			if tour {
				continue // keep the kind for a later slot
			}
			f = drawKind(rng, at, workers, KillWorker)
		}
		end := f.At + f.For
		if f.Kind == TermWorker || f.Kind == TermServer {
			end += stopAllowance
		}
		if end > duration {
			return out
		}
		target := f.Worker
		if f.Kind.onServer() {
			target = workers
		}
		if busyUntil[target] > at || busyUntil[workers] > at || (f.Kind.onServer() && slices.Max(busyUntil) > at) {
			continue
		}
		busyUntil[target] = end
		if f.Kind.onServer() {
			lastServer = at
		}
		out = append(out, f)
	}
}

// stopAllowance is what a schedule sets aside for a graceful stop's drain.
const stopAllowance = 3 * time.Second

// draw picks one fault: worker kills and stops, black holes, and now and
// then a server kill.
func draw(rng *rand.Rand, at time.Duration, workers int) Fault {
	switch p := rng.IntN(20); {
	case p < 5:
		return drawKind(rng, at, workers, KillWorker)
	case p < 10:
		return drawKind(rng, at, workers, StopWorker)
	case p < 14:
		return drawKind(rng, at, workers, BlackHole)
	case p < 16:
		return drawKind(rng, at, workers, TermWorker)
	case p < 18:
		return drawKind(rng, at, workers, TermServer)
	}
	return drawKind(rng, at, workers, KillServer)
}

// drawKind draws a fault of kind k: its target and how long it lasts.
// Freezes and black holes last 1.5–6 s, either side of a 3 s liveness
// bound, so that some are noticed and some are over first.
func drawKind(rng *rand.Rand, at time.Duration, workers int, k FaultKind) Fault {
	f := Fault{At: at, Kind: k, Worker: rng.IntN(workers)}
	switch k {
	case KillWorker, TermWorker:
		f.For = between(rng, time.Second, 3*time.Second)
	case StopWorker, BlackHole:
		f.For = between(rng, 1500*time.Millisecond, 6*time.Second)
	case KillServer, TermServer:
		f.For = between(rng, 500*time.Millisecond, 2*time.Second)
	}
	return f
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// serverLike drives a core with the events the server's dispatch loop
// feeds it (server/dispatch.go, dispatch_jobs.go, workers.go) during
// `braid bench scale`: one-thread workers that come up awaiting a lease
// and lend their one stream, one job of alike sized units, and for every
// result a Feedback (an empty queue, the worker's rate, the unit's time
// on the way) then the UnitFinished and a Progress call, a Tick every
// 100 ms. The server, not the workers, is the bottleneck: it handles
// perWorker results a second a worker, in the order the units went out,
// so each result waits behind every unit in flight. That makes each
// worker's byte budget (what it delivers in the horizon) a fraction of a
// unit above a whole number of units: its key says it has byte room,
// but no unit fits, which is what a walk of the room rankings passes
// over.
type serverLike struct {
	tb     testing.TB
	core   *scheduler.Core
	now    time.Time
	tick   time.Time
	gap    time.Duration // between results
	flight []sent        // FIFO of units in flight
}

type sent struct {
	a  scheduler.Assignment
	at time.Time
}

// newServerLike starts a run of units of size bytes; of -size and
// 3×-size bytes by turns if size is negative.
func newServerLike(tb testing.TB, workers int, perWorker float64, size int64) *serverLike {
	s := &serverLike{tb: tb, core: scheduler.New(scheduler.Config{}), now: time.Unix(0, 0),
		gap: time.Duration(float64(time.Second) / (perWorker * float64(workers)))}
	s.tick = s.now
	for k := range workers {
		name := fmt.Sprintf("w%06d", k)
		s.step(scheduler.WorkerUp{Worker: name, Streams: 1, Threads: 1, Ops: []string{"noop"}, AwaitLease: true})
		s.step(scheduler.WorkerLease{Worker: name, Streams: 1})
	}
	job := scheduler.JobAdded{Job: "j", Policy: "dynamic", Speculate: true}
	if size > 0 {
		job.Repeat = scheduler.Repeat{Count: 1 << 30, Op: "noop", Size: size}
	} else { // units of -size bytes and three times that, by turns
		job.Units = make([]scheduler.Unit, 60*workers)
		for i := range job.Units {
			job.Units[i] = scheduler.Unit{Index: i, Op: "noop", Size: -size * int64(1+2*(i%2))}
		}
	}
	s.step(job)
	return s
}

func (s *serverLike) step(ev scheduler.Event) {
	out, err := s.core.Step(s.now, ev)
	if err != nil {
		s.tb.Fatal(err)
	}
	for _, a := range out.Assign {
		s.flight = append(s.flight, sent{a, s.now})
	}
}

// result answers the oldest unit in flight as the server hands it over.
func (s *serverLike) result() {
	f := s.flight[0]
	s.flight = s.flight[1:]
	s.now = s.now.Add(s.gap)
	compute := time.Microsecond
	s.step(scheduler.Feedback{Worker: f.a.Worker, ServiceRate: 1e6, Transit: time.Millisecond})
	s.step(scheduler.UnitFinished{Job: f.a.Job, Unit: f.a.Unit, Worker: f.a.Worker, Stream: f.a.Stream,
		Attempt: f.a.Attempt, Compute: compute})
	if _, ok := s.core.Progress(f.a.Job); !ok {
		s.tb.Fatalf("no progress for %s", f.a.Job)
	}
	if s.now.Sub(s.tick) >= 100*time.Millisecond {
		s.tick = s.now
		for _, a := range s.core.Tick(s.now).Assign {
			s.flight = append(s.flight, sent{a, s.now})
		}
	}
}

// serverLikeWork returns the work (Core.Work) per result of a serverLike
// run of n workers, once every worker has had time to settle.
func serverLikeWork(tb testing.TB, n int, perWorker float64, size int64) [2]float64 {
	s := newServerLike(tb, n, perWorker, size)
	for range 40 * n {
		s.result()
	}
	times := 4*n + 200
	v0, m0 := s.core.Work()
	for range times {
		s.result()
	}
	v, m := s.core.Work()
	return [2]float64{float64(v-v0) / float64(times), float64(m-m0) / float64(times)}
}

// TestPlacementWorkServerPattern: driven as the server drives it, with
// byte budgets a fraction of a unit over what the workers hold, the core
// does about the same work per result at 2,000 workers as at 100: with
// units of one size, a power of two bytes or not, and of two sizes.
func TestPlacementWorkServerPattern(t *testing.T) {
	const small, big = 100, 2000
	for _, size := range []int64{1024, 1000, -1000} {
		t.Run(fmt.Sprintf("size=%d", size), func(t *testing.T) {
			ws := serverLikeWork(t, small, 3.7, size)
			wb := serverLikeWork(t, big, 3.7, size)
			t.Logf("per result: %v at %d workers, %v at %d", ws, small, wb, big)
			if err := growth(ws, wb, small, big); err != nil {
				t.Error(err)
			}
		})
	}
}

// BenchmarkServerPattern measures one result as the server feeds it to
// the core (serverLike: a Feedback, the UnitFinished, a Progress call) on
// one-thread workers busy up to their byte budgets.
func BenchmarkServerPattern(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			s := newServerLike(b, n, 3.7, 1024)
			for range 40 * n {
				s.result()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s.result()
			}
		})
	}
}

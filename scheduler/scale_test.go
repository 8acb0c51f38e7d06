package scheduler_test

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/braidhq/braid/scheduler"
)

// shape is the work of a placementWork run.
type shape struct {
	name string
	// units per job: 20 a worker if 0, enough to keep every window full;
	// fewer leave most workers idle, one job after another.
	units     int
	speculate bool
	policies  []string
}

// shapes: every policy on a busy cluster; dynamic (the default, which
// speculates) on a mostly idle one. The static policies are left out
// there: they plan a job's shares over every capable worker, O(workers)
// once a job, which a job of 50 units spread over thousands of workers
// does not amortize.
var shapes = []shape{
	{name: "busy", policies: scheduler.PolicyNames},
	{name: "idle", units: 50, speculate: true, policies: []string{"dynamic"}},
}

// placementWork drives a core of n one-stream workers of mixed speeds
// through jobs of shape sh as BenchmarkWorkers does, and returns the work
// placement did (Core.Work) per result cycle once every worker is
// measured, and per event while workers come up, each for
// membershipCycles results, and go down.
func placementWork(tb testing.TB, newCore func(scheduler.Config) *scheduler.Core, policy string, sh shape, n int) (perUnit, perMember [2]float64) {
	units := cmp.Or(sh.units, 20*n)
	s := &steady{tb: tb, core: newCore(scheduler.Config{}), now: time.Unix(0, 0),
		policy: policy, units: make([]scheduler.Unit, units), speeds: n, speculate: sh.speculate}
	for i := range s.units {
		s.units[i] = scheduler.Unit{Index: i, Op: "op"}
	}
	for k := range n {
		s.step(scheduler.WorkerUp{Worker: fmt.Sprintf("w%06d", k), Streams: 1, Ops: []string{"op"}})
	}
	s.addJob()
	for range 3 * n { // every worker measured
		s.cycle()
	}
	perUnit = s.work(2*n+200, s.cycle)
	k := n
	perMember = s.work(max(n/10, 100), func() {
		name := fmt.Sprintf("w%06d", k)
		k++
		s.step(scheduler.WorkerUp{Worker: name, Streams: 1, Ops: []string{"op"}})
		for range membershipCycles {
			s.cycle()
		}
		s.step(scheduler.WorkerDown{Worker: name})
		s.flight = slices.DeleteFunc(s.flight, func(a scheduler.Assignment) bool { return a.Worker == name })
	})
	perMember[0] /= membershipCycles + 2
	perMember[1] /= membershipCycles + 2
	return perUnit, perMember
}

// membershipCycles is how many results placementWork lets come back while
// an extra worker is up. A worker joining may rebuild a ranking dropped
// while unused (O(workers), paid for by the updates it went unused): the
// work is counted per event, over results and membership changes alike.
const membershipCycles = 20

// work runs do times times and returns the visits and moves per run.
func (s *steady) work(times int, do func()) [2]float64 {
	v0, m0 := s.core.Work()
	for range times {
		do()
	}
	v, m := s.core.Work()
	return [2]float64{float64(v-v0) / float64(times), float64(m-m0) / float64(times)}
}

// growth compares the work per event at big workers with that at small
// ones and says how it grows faster than O(log workers) allows: visits
// (worker records looked at) must stay about the same, moves (ranking
// entries moved) grow at most as the log of the workers does, with
// slack. A scan of every worker per event grows visits in proportion.
func growth(small, big [2]float64, ns, nb int) error {
	if big[0] > 1.5*small[0]+2 {
		return fmt.Errorf("%.1f workers visited at %d workers against %.1f at %d", big[0], nb, small[0], ns)
	}
	if logs := math.Log(float64(nb)) / math.Log(float64(ns)); big[1] > 2*logs*small[1]+8 {
		return fmt.Errorf("%.1f ranking entries moved at %d workers against %.1f at %d", big[1], nb, small[1], ns)
	}
	return nil
}

// TestPlacementWorkFlat: with each policy, the work placement does per
// result, and per event while workers come and go during a job, is about
// the same with 3,000 workers as with 100. It counts operations, not time,
// so a busy machine does not change it.
func TestPlacementWorkFlat(t *testing.T) {
	const small, big = 100, 3000
	for _, sh := range shapes {
		for _, policy := range sh.policies {
			t.Run(sh.name+"/"+policy, func(t *testing.T) {
				us, ms := placementWork(t, scheduler.New, policy, sh, small)
				ub, mb := placementWork(t, scheduler.New, policy, sh, big)
				t.Logf("per result: %v at %d workers, %v at %d; per event with workers coming and going: %v, %v", us, small, ub, big, ms, mb)
				if err := growth(us, ub, small, big); err != nil {
					t.Errorf("per result: %v", err)
				}
				if err := growth(ms, mb, small, big); err != nil {
					t.Errorf("with workers coming and going: %v", err)
				}
			})
		}
	}
}

// TestPlacementWorkCatchesScan: the reference finder (naive_test.go),
// which scans every worker for each query as the core did before it kept
// indexes, fails the check of TestPlacementWorkFlat, at a tenth of its
// size.
func TestPlacementWorkCatchesScan(t *testing.T) {
	const small, big = 10, 100
	for _, sh := range shapes {
		for _, policy := range sh.policies {
			us, ms := placementWork(t, scheduler.NewNaive, policy, sh, small)
			ub, mb := placementWork(t, scheduler.NewNaive, policy, sh, big)
			if growth(us, ub, small, big) == nil || growth(ms, mb, small, big) == nil {
				t.Errorf("%s/%s: scans pass: per result %v at %d workers, %v at %d; with workers coming and going %v, %v",
					sh.name, policy, us, small, ub, big, ms, mb)
			}
		}
	}
}

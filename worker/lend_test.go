package worker

import (
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestShare(t *testing.T) {
	cases := []struct {
		threads      int
		demand, held []int
		want         []int
	}{
		{4, []int{4, 4}, []int{0, 0}, []int{2, 2}},
		{4, []int{4, 0}, []int{2, 2}, []int{4, 0}},
		{4, []int{1, 4}, []int{0, 0}, []int{1, 3}},
		{3, []int{4, 4}, []int{0, 2}, []int{1, 2}}, // the leftover stays where it is
		{3, []int{4, 4}, []int{0, 0}, []int{2, 1}}, // else it goes to the older
		{1, []int{2, 2, 2}, []int{0, 0, 1}, []int{0, 0, 1}},
		{6, []int{1, 2, 8}, []int{0, 0, 0}, []int{1, 2, 3}},
		{4, []int{0, 0}, []int{1, 1}, []int{0, 0}},
		{0, []int{3}, []int{0}, []int{0}},
	}
	for _, c := range cases {
		got := share(c.threads, c.demand, c.held)
		if !slices.Equal(got, c.want) {
			t.Errorf("share(%d, %v, held %v) = %v, want %v", c.threads, c.demand, c.held, got, c.want)
		}
		sum := 0
		for i, g := range got {
			sum += g
			if g > c.demand[i] {
				t.Errorf("share(%d, %v) gives %d more than asked", c.threads, c.demand, i)
			}
		}
		if sum > c.threads {
			t.Errorf("share(%d, %v) lends %d threads", c.threads, c.demand, sum)
		}
	}
}

// fakeClock is a settable clock for the lender's idle hold.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func leases(l *lender, loans ...*loan) []int {
	var out []int
	for _, ln := range loans {
		n, _ := l.current(ln)
		out = append(out, n)
	}
	return out
}

// A busy server gets every thread; a second busy server gets a fair share
// at once; a server that stops asking keeps its threads for the idle
// period, then they go to the one still asking.
func TestLenderFollowsDemand(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLender(4, time.Second, clk.now)
	defer l.stop()
	a, b := l.add(4), l.add(4)
	if got := leases(l, a, b); !slices.Equal(got, []int{4, 0}) {
		t.Fatalf("new associations lent %v, want the first every thread nobody asked for, the second none", got)
	}
	l.ask(a, 4)
	if got := leases(l, a, b); !slices.Equal(got, []int{4, 0}) {
		t.Fatalf("one busy server: %v", got)
	}
	_, gate := l.current(b)
	l.ask(b, 4)
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("two busy servers: %v", got)
	}
	select {
	case <-gate:
	default:
		t.Error("b's gate did not close when its lease changed")
	}
	select {
	case <-b.kick:
	default:
		t.Error("b's control sender was not told")
	}
	clk.t = clk.t.Add(100 * time.Millisecond)
	l.ask(a, 0)
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("a idle for 0s keeps its lease: %v", got)
	}
	clk.t = clk.t.Add(time.Second)
	l.ask(b, 4) // any event after the idle period re-divides; so does the timer
	if got := leases(l, a, b); !slices.Equal(got, []int{0, 4}) {
		t.Fatalf("after a's idle period: %v", got)
	}
	l.remove(b)
	l.ask(a, 3)
	if got := leases(l, a); !slices.Equal(got, []int{4}) {
		t.Fatalf("after b left: %v, want a's 3 and the one nobody else wants", got)
	}
	l.drain()
	l.ask(a, 4)
	if got := leases(l, a); !slices.Equal(got, []int{0}) || l.leased() != 0 {
		t.Fatalf("draining lends %v", got)
	}
}

// A server that asked for its whole lease for a long time and then asks for
// less keeps the lease for the idle period against another server's want,
// measured from when it asked less, not from the last time the threads
// were divided.
func TestLenderHoldsAfterLongSteadyUse(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLender(4, time.Second, clk.now)
	defer l.stop()
	a, b := l.add(4), l.add(4)
	l.ask(a, 4)
	clk.t = clk.t.Add(10 * time.Second) // steady: no want changes, no division
	l.ask(a, 1)
	l.ask(b, 4)
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("a dip after 10s of steady use, b busy: leases %v, want a's 4 held for the idle period (a fair share of it)", got)
	}
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(b, 4)
	if got := leases(l, a, b); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("after the idle period: leases %v, want a's 1 and the rest to b", got)
	}
}

// Threads no server asks for are lent all the same: a new association
// starts with those nobody holds, and after its idle hold a lease stays
// while no other server wants the threads, so a lone server's jobs start
// on every stream. A want from another server takes them at once; spare
// threads go back to those that held them before anyone else, and then
// to whoever has streams for them, as share divides threads.
func TestLenderLendsSpareThreads(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLender(4, time.Second, clk.now)
	defer l.stop()
	a := l.add(4)
	if got := leases(l, a); !slices.Equal(got, []int{4}) {
		t.Fatalf("a lone new association: %v, want every thread before its server asks", got)
	}
	b := l.add(4)
	l.ask(a, 4)
	l.ask(a, 0)
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(a, 0)
	if got := leases(l, a, b); !slices.Equal(got, []int{4, 0}) {
		t.Fatalf("a idle past its hold, nobody else asking: %v, want a's 4 kept", got)
	}
	l.ask(b, 3)
	if got := leases(l, a, b); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("b asks for 3: %v, want 3 taken from a at once and its spare one kept", got)
	}
	l.ask(b, 0)
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(a, 2)
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 2}) {
		t.Fatalf("a asks for 2, b idle past its hold: %v, want a 2 and b's spare 2 kept", got)
	}
	c := l.add(4)
	l.remove(b)
	if got := leases(l, a, c); !slices.Equal(got, []int{3, 1}) {
		t.Fatalf("b left with its 2, nobody asking for them: %v, want them shared between a and c", got)
	}
	l.drain()
	if got := leases(l, a, c); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("draining keeps %v", got)
	}
}

// The idle hold ends by itself: the timer re-divides without another
// event, when the hold is up and not before (on a synctest bubble's clock).
func TestLenderIdleTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 30 * time.Millisecond
		l := newLender(2, idle, time.Now)
		defer l.stop()
		a, b := l.add(2), l.add(2)
		l.ask(a, 2)
		l.ask(b, 2)
		l.ask(a, 0)
		time.Sleep(idle - time.Millisecond)
		synctest.Wait()
		if got := leases(l, a, b); !slices.Equal(got, []int{1, 1}) {
			t.Fatalf("leases %v within a's idle hold, want 1 each still", got)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := leases(l, a, b); !slices.Equal(got, []int{0, 2}) {
			t.Fatalf("leases %v when a's idle hold is up, want b's 2", got)
		}
	})
}

// Threads lent spare are not earned: a server that stops asking holds for
// the idle period only what its demand won, and a unit that arrives on a
// spare stream is a want for it, so that another server's want arriving
// just after does not take the thread the unit waits for.
func TestLenderSpareIsNotEarned(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLender(6, time.Second, clk.now)
	defer l.stop()
	a, b := l.add(6), l.add(6)
	clk.t = clk.t.Add(time.Hour) // a has held all six spare for long
	l.ask(a, 2)                  // a job of two units; a holds the other four spare
	l.ask(a, 0)
	l.ask(b, 6) // within a's hold
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 4}) {
		t.Fatalf("b asks within a's hold: %v, want a the 2 it earned and b the rest", got)
	}
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(b, 6)
	if got := leases(l, a, b); !slices.Equal(got, []int{0, 6}) {
		t.Fatalf("after a's hold: %v, want 0 and 6", got)
	}

	l2 := newLender(2, time.Second, clk.now)
	defer l2.stop()
	c, d := l2.add(2), l2.add(2)
	if got := leases(l2, c, d); !slices.Equal(got, []int{2, 0}) {
		t.Fatalf("new associations: %v, want c lent both spare", got)
	}
	<-c.kick         // the first lease
	l2.arrived(c, 1) // c's server sent a unit on a spare stream before asking
	if n, again := l2.toSend(c); n != 2 || !again {
		t.Fatalf("after a unit on a spare stream: lease %d, sent again %v; want 2 sent again, for the server's answer", n, again)
	}
	select {
	case <-c.kick:
	default:
		t.Fatal("c's control sender was not told to send the lease again")
	}
	l2.ask(d, 2)
	if got := leases(l2, c, d); !slices.Equal(got, []int{1, 1}) {
		t.Fatalf("d asks after c's unit arrived on stream 1: %v, want a fair share each (a lease of 0 would hand the unit back)", got)
	}
	l2.ask(c, 0) // c's server answers: its unit is done, it wants nothing
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l2.ask(d, 2)
	if got := leases(l2, c, d); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("after c's answer and hold: %v, want 0 and 2", got)
	}
}

// A unit that arrives on a stream beyond what its server's demand earned is
// a want for that stream: a server whose want waited behind a large unit
// on stream 0 while its lease went to another server gets it back when the
// unit arrives, and a fair share of it while the other server is busy; a
// unit on a stream its demand earned changes nothing; a stopping worker
// lends nothing whatever arrives.
func TestLenderUnitArrival(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := newLender(2, time.Second, clk.now)
	defer l.stop()
	a, b := l.add(2), l.add(2)
	l.ask(a, 2)
	l.ask(a, 0) // a's job ended; its next want is late
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(b, 2)
	l.ask(b, 0)
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(b, 0)
	if got := leases(l, a, b); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("b took a's threads, then idled past its hold: %v, want 0 and 2", got)
	}
	l.arrived(a, 1)
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 0}) {
		t.Fatalf("a unit on a's stream 1 arrived: %v, want 2 and 0", got)
	}
	l.arrived(a, 0) // a lower stream lowers nothing
	if got := leases(l, a, b); !slices.Equal(got, []int{2, 0}) {
		t.Fatalf("a unit on stream 0 arrived: %v, want 2 and 0", got)
	}
	l.ask(a, 1)
	l.arrived(a, 1) // on a leased stream: the want stays 1, so the hold can end
	if a.want != 1 {
		t.Fatalf("a unit on a leased stream raised the want to %d, want 1", a.want)
	}

	l.ask(a, 0)
	l.ask(b, 2)
	clk.t = clk.t.Add(1100 * time.Millisecond)
	l.ask(b, 2)
	if got := leases(l, a, b); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("b busy, a idle: %v", got)
	}
	l.arrived(a, 0)
	if got := leases(l, a, b); !slices.Equal(got, []int{1, 1}) {
		t.Fatalf("a unit for a while b is busy: %v, want a fair share", got)
	}
	l.drain()
	l.arrived(a, 1) // a's want is 1: this raises it, and the division runs
	if got := leases(l, a, b); !slices.Equal(got, []int{0, 0}) {
		t.Fatalf("draining: %v", got)
	}
}

// Random wants, arrivals, associations that come and go and a clock that
// moves: the leases never add up to more than the threads, none exceeds
// its association's streams or is below what its demand earned, nothing is
// lent while draining, and dividing again with nothing changed changes no
// lease (no flapping between idle holders). A real lender's timer divides
// when a hold expires; here the clock's moves do.
func TestLenderInvariants(t *testing.T) {
	for seed := range int64(200) {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		clk := &fakeClock{t: time.Unix(1000, 0)}
		threads := 1 + rng.IntN(8)
		l := newLender(threads, time.Second, clk.now)
		var live []*loan
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 2 || len(live) == 0:
				live = append(live, l.add(1+rng.IntN(8)))
			case op < 3:
				i := rng.IntN(len(live))
				l.remove(live[i])
				live = slices.Delete(live, i, i+1)
			case op < 6:
				l.ask(live[rng.IntN(len(live))], rng.IntN(9))
			case op < 8:
				ln := live[rng.IntN(len(live))]
				l.arrived(ln, rng.IntN(ln.slots))
			default: // time passes; the hold's timer divides at its expiry
				clk.t = clk.t.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				l.mu.Lock()
				l.divideLocked()
				l.mu.Unlock()
			}
			if seed%10 == 0 && step == 50 {
				l.drain()
			}
			l.mu.Lock()
			sum := 0
			for _, ln := range live {
				sum += ln.lease
				if ln.lease < 0 || ln.lease > ln.slots || ln.earned > ln.lease || l.draining && ln.lease != 0 {
					t.Fatalf("seed %d step %d: loan of %d streams: lease %d, earned %d, draining %v", seed, step, ln.slots, ln.lease, ln.earned, l.draining)
				}
			}
			if sum > threads {
				t.Fatalf("seed %d step %d: leases add up to %d of %d threads", seed, step, sum, threads)
			}
			before := make([]int, len(live))
			for i, ln := range live {
				before[i] = ln.lease
			}
			l.divideLocked()
			for i, ln := range live {
				if ln.lease != before[i] {
					t.Fatalf("seed %d step %d: dividing again moved a lease from %d to %d", seed, step, before[i], ln.lease)
				}
			}
			l.mu.Unlock()
		}
		l.stop()
	}
}

package preauth

import (
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var (
	srcA = netip.MustParseAddr("10.0.0.1")
	srcB = netip.MustParseAddr("10.0.0.2")
)

// TestEvictsOldestPerSource checks that a source over its bound loses its
// oldest connection, and other sources keep theirs.
func TestEvictsOldestPerSource(t *testing.T) {
	g := &Gate{MaxTotal: 10, MaxPerSource: 2, Quiet: time.Hour}
	var evicted [4]atomic.Bool
	b := g.Enter(srcB, func() { t.Error("source B evicted") })
	defer b.Leave()
	for i := range 3 {
		s := g.Enter(srcA, func() { evicted[i].Store(true) })
		defer s.Leave()
	}
	if !evicted[0].Load() || evicted[1].Load() || evicted[2].Load() {
		t.Errorf("evicted %v, want only the first", evicted[:3])
	}
	if g.Len() != 3 {
		t.Errorf("Len %d, want 3", g.Len())
	}
}

// TestEvictsOldestInTotal checks the total bound.
func TestEvictsOldestInTotal(t *testing.T) {
	g := &Gate{MaxTotal: 2, MaxPerSource: 2, Quiet: time.Hour}
	var first atomic.Bool
	g.Enter(srcA, func() { first.Store(true) })
	s2 := g.Enter(srcB, func() { t.Error("second evicted") })
	s3 := g.Enter(srcB, func() { t.Error("third evicted") })
	if !first.Load() || g.Len() != 2 {
		t.Fatalf("first evicted %v, Len %d", first.Load(), g.Len())
	}
	s2.Leave()
	s3.Leave()
	s3.Leave()
	if g.Len() != 0 {
		t.Errorf("Len %d after Leave, want 0", g.Len())
	}
}

// TestQuiet checks that a silent slot is evicted after Quiet and one that
// spoke is not.
func TestQuiet(t *testing.T) {
	g := &Gate{Quiet: 20 * time.Millisecond}
	silent, spoke := make(chan struct{}), make(chan struct{})
	g.Enter(srcA, func() { close(silent) })
	s := g.Enter(srcA, func() { close(spoke) })
	s.Spoke()
	select {
	case <-silent:
	case <-time.After(5 * time.Second):
		t.Fatal("silent slot not evicted")
	}
	select {
	case <-spoke:
		t.Fatal("a slot that spoke was evicted by the quiet timer")
	case <-time.After(100 * time.Millisecond):
	}
	if g.Len() != 1 {
		t.Errorf("Len %d, want 1", g.Len())
	}
}

// TestSilentFirstWithinSource: a source over its bound loses its silent
// connections before the one under way, even when that one is the oldest:
// a real dialer behind the same address as a flood of idle connections
// keeps its handshake.
func TestSilentFirstWithinSource(t *testing.T) {
	g := &Gate{MaxTotal: 100, MaxPerSource: 4, Quiet: time.Hour}
	real := g.Enter(srcA, func() { t.Error("the connection under way was evicted") })
	defer real.Leave()
	real.Spoke()
	var evicted atomic.Int64
	for range 50 {
		s := g.Enter(srcA, func() { evicted.Add(1) })
		defer s.Leave()
	}
	if evicted.Load() != 47 || g.Len() != 4 {
		t.Errorf("evicted %d, Len %d; want 47 and 4", evicted.Load(), g.Len())
	}
}

// TestFairAcrossSources: when the total is reached, newcomers evict from
// the source holding the most, so one with a single connection keeps it.
func TestFairAcrossSources(t *testing.T) {
	g := &Gate{MaxTotal: 8, MaxPerSource: 8, Quiet: time.Hour}
	lone := g.Enter(srcB, func() { t.Error("the lone source's connection was evicted") })
	defer lone.Leave()
	for i := range 100 {
		src := netip.AddrFrom4([4]byte{10, 1, 0, byte(i % 4)})
		s := g.Enter(src, func() {})
		defer s.Leave()
	}
	if g.Len() != 8 {
		t.Errorf("Len %d, want 8", g.Len())
	}
}

// TestProvedSourcesFirst: a source that proved the secret before keeps its
// connections against newcomers from unproved sources, which are refused
// when only proved sources' connections are left; a proved newcomer still
// gets in.
func TestProvedSourcesFirst(t *testing.T) {
	g := &Gate{MaxTotal: 2, MaxPerSource: 2, Quiet: time.Hour}
	g.Enter(srcA, func() {}).Proved()
	if g.Len() != 0 {
		t.Fatalf("Len %d after Proved, want 0", g.Len())
	}
	k1 := g.Enter(srcA, func() { t.Error("a proved source's connection was evicted by a stranger") })
	k2 := g.Enter(srcA, func() { t.Error("a proved source's connection was evicted by a stranger") })
	var refused atomic.Bool
	g.Enter(srcB, func() { refused.Store(true) })
	if !refused.Load() || g.Len() != 2 {
		t.Fatalf("stranger refused %v, Len %d; want true and 2", refused.Load(), g.Len())
	}
	k1.Leave()
	var evicted atomic.Bool
	s := g.Enter(srcB, func() { evicted.Store(true) })
	k3 := g.Enter(srcA, func() {})
	if !evicted.Load() {
		t.Error("a proved newcomer did not evict the stranger")
	}
	s.Leave()
	k2.Leave()
	k3.Leave()
}

// TestKnownBounded: the proved sources remembered are bounded.
func TestKnownBounded(t *testing.T) {
	g := &Gate{Known: 3}
	for i := range 10 {
		g.Enter(netip.AddrFrom4([4]byte{10, 2, 0, byte(i)}), func() {}).Proved()
	}
	g.mu.Lock()
	n := len(g.known)
	g.mu.Unlock()
	if n != 3 {
		t.Errorf("%d proved sources remembered, want 3", n)
	}
}

// TestRefusalsAggregated: the first refusal of a source in an interval is
// logged at once, the others of the interval in one line with their count;
// sources past MaxSources share a line. It runs in a synctest bubble: the
// summaries say how long their interval lasted, which on a real clock is
// how late the loaded machine ran the interval's timer ("in the last
// 200ms" for a 50 ms interval, beside two CPU hogs), not what Refusals does.
func TestRefusalsAggregated(t *testing.T) {
	synctest.Test(t, refusalsAggregated)
}

func refusalsAggregated(t *testing.T) {
	lines := make(chan string, 100)
	r := &Refusals{Every: 50 * time.Millisecond, MaxSources: 2, Log: func(f string, a ...any) { lines <- fmt.Sprintf(f, a...) }}
	defer r.Close()
	srcC := netip.MustParseAddr("10.0.0.3")
	for i := range 5 {
		r.Note(srcA, "refused A %d", i)
		r.Note(srcB, "refused B %d", i)
		r.Note(srcC, "refused C %d", i)
	}
	got := []string{<-lines, <-lines}
	slices.Sort(got)
	if got[0] != "refused A 0" || got[1] != "refused B 0" {
		t.Fatalf("first lines %q, want one for A and one for B", got)
	}
	var rest []string
	for range 3 {
		select {
		case l := <-lines:
			rest = append(rest, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("summaries after the interval: %q, want 3", rest)
		}
	}
	slices.Sort(rest)
	want := []string{"4 more like it from 10.0.0.1 in the last 100ms; the latest: refused A 4",
		"4 more like it from 10.0.0.2 in the last 100ms; the latest: refused B 4",
		"5 more from other sources in the last 100ms; the latest: refused C 4"}
	for i := range want {
		if rest[i] != want[i] {
			t.Errorf("summary %d: %q, want %q", i, rest[i], want[i])
		}
	}
	r.Note(srcA, "refused A again")
	if l := <-lines; l != "refused A again" {
		t.Errorf("first line of the next interval %q", l)
	}
}

// TestPendingSpoken: a connection whose first bytes arrived after it
// entered, before its goroutine read them, is found out when it would be
// evicted, and kept as spoken.
func TestPendingSpoken(t *testing.T) {
	g := &Gate{MaxTotal: 100, MaxPerSource: 4, Quiet: time.Hour}
	var arrived atomic.Bool
	real := g.EnterConn(srcA, func() bool { return arrived.Load() }, func() { t.Error("the connection with bytes waiting was evicted") })
	defer real.Leave()
	arrived.Store(true)
	for range 20 {
		s := g.EnterConn(srcA, func() bool { return false }, func() {})
		defer s.Leave()
	}
	if g.Len() != 4 {
		t.Errorf("Len %d, want 4", g.Len())
	}
}

// TestAnnouncedJoinsKeepTheirPlace: a dialer that proved the secret and
// announced its association's further connections (Expect) keeps them
// while their first bytes are in flight, though they are silent and
// handshakes of strangers from the same address are under way: a
// stranger's oldest goes instead. Before Expect, the dialer's second
// connection evicted its first (CI: ptcp's DoS/UnauthenticatedPeers).
func TestAnnouncedJoinsKeepTheirPlace(t *testing.T) {
	g := &Gate{MaxPerSource: 4, Quiet: time.Hour}
	g.Enter(srcA, func() {}).Proved() // a worker behind srcA dialed before
	var evicted [3]atomic.Bool
	for i := range 3 {
		s := g.Enter(srcA, func() { evicted[i].Store(true) })
		s.Spoke() // a stranger's hello: under way, never finished
		defer s.Leave()
	}
	dialer := g.Enter(srcA, func() { t.Error("the dialer's handshake evicted") })
	dialer.Spoke()
	dialer.Proved()
	arrived, done := dialer.Expect(2)
	defer done()
	join1 := g.Enter(srcA, func() { t.Error("the dialer's first join evicted by its second") })
	defer join1.Leave()
	join2 := g.Enter(srcA, func() { t.Error("the dialer's second join evicted") })
	defer join2.Leave()
	if !evicted[0].Load() || evicted[1].Load() || evicted[2].Load() {
		t.Errorf("strangers evicted %v, want only the oldest", evicted[:])
	}
	// Once both joins have arrived, or the wait has ended, nothing is
	// announced any more.
	arrived()
	done()
	arrived()
	g.mu.Lock()
	left := g.expect[srcA]
	g.mu.Unlock()
	if left != 0 {
		t.Errorf("%d connections still announced after the joins arrived", left)
	}
}

// TestAnnouncedCountsOnlyAsManyAsAnnounced: Expect(1) covers the newest
// silent connection of its source, not every silent one.
func TestAnnouncedCountsOnlyAsManyAsAnnounced(t *testing.T) {
	g := &Gate{MaxPerSource: 3, Quiet: time.Hour}
	var oldGone atomic.Bool
	old := g.Enter(srcA, func() { oldGone.Store(true) })
	defer old.Leave()
	dialer := g.Enter(srcA, func() { t.Error("the dialer's handshake evicted") })
	dialer.Spoke()
	_, done := dialer.Expect(1)
	defer done()
	join := g.Enter(srcA, func() { t.Error("the announced join evicted") })
	defer join.Leave()
	g.Enter(srcA, func() {}).Leave()
	if !oldGone.Load() {
		t.Error("the older silent connection was kept: Expect(1) covered two")
	}
}

// Package transporttest is the conformance suite every braid transport runs.
//
// A transport's test file calls Run with a constructor and a listen address:
//
//	func TestConformance(t *testing.T) {
//		transporttest.Run(t, func(t *testing.T) transport.Transport {
//			return tcp.New(tcp.Config{})
//		}, "127.0.0.1:0", transporttest.Options{Garbage: transporttest.TCPGarbage})
//	}
//
// Every subtest runs under a deadlock watchdog (a hang panics with a dump of
// all goroutines instead of stalling the run) and a goroutine-leak check. A
// transport that implements transport.Describer and reports
// IndependentStreams == false still runs the independence check, which is then
// expected to fail; the suite logs what it saw.
//
// Bench runs the same throughput and request/response benchmarks against
// any transport:
//
//	func BenchmarkTransport(b *testing.B) {
//		transporttest.Bench(b, func(b *testing.B) transport.Transport {
//			return tcp.New(tcp.Config{})
//		}, "127.0.0.1:0")
//	}
//
// Listeners must report each dropped peer through ListenConfig.Logf with the
// error among the arguments (formatted with %v), so that the suite can tell an
// authentication failure from other failures.
//
// # Liveness
//
// The Liveness cases check that a peer that vanishes without a word is
// noticed on both ends within the liveness bound (Options.Liveness, 1 s by
// default), and that alive peers are not: Liveness/BlackHole cuts the path
// between the ends (through netem/relay, or Options.BlackHole);
// Liveness/Frozen freezes the peer with SIGSTOP, the peer being a second
// process: the suite re-executes the test binary (os.Args[0]) with -test.run
// set to exactly the current subtest and the environment variable
// BRAID_TRANSPORTTEST_PEER telling Run to play the peer (listen or dial,
// echo stream 0, print its address, wait for its parent to go);
// Liveness/IdleIsAlive and Liveness/StalledReaderIsAlive keep alive ends
// idle, or one end's reader stalled, for 2.5 bounds (of at least 2 s, so
// that a loaded machine's stall is not taken for silence). A transport's test
// binary therefore must call Run from a top-level test whose subtests it
// does not rename.
//
// # Confidentiality
//
// Confidentiality/Tap sends a message each way over a path that shows
// every byte it carries (Path.Tap: netem/relay's), as a capture would.
// Options.Encrypted says whether the transport as built encrypts; the case
// then requires the message's bytes never to cross in clear, and otherwise
// that they do, so that a tap that saw nothing cannot pass it.
//
// Confidentiality/Relay puts an active attacker on the path: a man in the
// middle (Options.Intercept) that terminates the transport's cryptography
// with credentials of its own, towards the dialer and towards the listener,
// and relays what it decrypts (relay_cases.go). Through a stranger's relay
// the association must fail with transport.ErrAuth at the dialer, the
// listener must refuse the relay with ErrAuth too, Admit must never run, and
// the relay must see none of a unit's bytes; through an insider's relay (one
// holding the cluster secret) the association must come up and the relay
// must read the unit, which shows the relay works. A transport that does not
// encrypt skips it (the tap reads it already); one that does must supply
// Options.Intercept (TLSIntercept for the TCP transports over TLS).
//
// # Strangers
//
// Handshake/ForgedMAC runs the dialer's side of the handshake by hand over
// Options.Channel with a tampered MAC, which only the listener's check of
// the dialer's proof can catch. The DoS cases attack a listener with the
// transport's own attackers (Options.Attacks: TCPAttacks for tcp and tcpn)
// and require that a legitimate dial still associates within 1 s and the
// heap stays within a stated bound (dos_cases.go). A transport that supplies
// no Channel or attacker has those cases skip, saying so.
package transporttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/braidhq/braid/transport"
)

// Options tunes Run for one transport.
type Options struct {
	// Garbage, if set, sends junk to a listener at addr the way a confused
	// or hostile peer would (raw bytes over TCP, junk datagrams over UDP). It
	// must return once the junk is sent. The suite then checks that the
	// listener keeps accepting good associations.
	Garbage func(addr string) error
	// Timeout bounds each subtest before the watchdog dumps all
	// goroutines and panics: at least minTimeout, which is also the
	// default; a transport may ask for longer.
	Timeout time.Duration
	// Liveness is the liveness bound the Liveness cases configure on both
	// ends. Zero means 1 s.
	Liveness time.Duration
	// BlackHole, if set, builds the path Liveness/BlackHole dials through
	// and then cuts. Zero means RelayPath: netem/relay between the
	// ends, which carries transports over TCP or UDP.
	BlackHole func(t testing.TB, tr transport.Transport, listenAddr string) Path
	// NarrowBlackHole says the BlackHole path carries too little for a
	// bulk message within the case's time (kernel SCTP over a userspace
	// UDP relay under emulation, ksctp in the VM): CloseDuringSend then
	// skips, saying why.
	NarrowBlackHole bool
	// Channel, if set, opens the transport's first channel to a listener
	// at addr (the one the braid handshake runs on) without running the
	// handshake, and returns it with a func that closes it. The
	// Handshake/ForgedMAC case runs a handshake with a tampered MAC over
	// it; without Channel that case skips.
	Channel func(ctx context.Context, addr string) (transport.HandshakeConn, func(), error)
	// Attacks are the DoS cases' attackers, expressed for this transport
	// (dos_cases.go); a nil one makes its case skip, saying so.
	Attacks Attacks
	// Encrypted says the transport as built encrypts on loopback too:
	// Confidentiality/Tap then requires that no message crosses the path
	// in clear; without it, that every one does (which shows the path's
	// tap saw the traffic). An encrypting transport must supply Intercept.
	Encrypted bool
	// Intercept starts the man in the middle Confidentiality/Relay
	// dials through (see Interceptor).
	Intercept Interceptor
}

var testSecret = []byte("transporttest cluster secret")

// Secret returns the cluster secret the suite's ends share, for hooks
// that need the cluster's credentials (an Options.Channel over TLS keyed to
// the secret, say).
func Secret() []byte { return bytes.Clone(testSecret) }

// errTestDone is the reason given when a test tears an association down.
var errTestDone = errors.New("transporttest: test finished")

type suite struct {
	tr   transport.Transport
	addr string
	opts Options
}

type testCase struct {
	name string
	fn   func(t *testing.T, s *suite)
}

func cases() []testCase {
	return []testCase{
		{"Handshake/Negotiate", testNegotiate},
		{"Handshake/AdmitCaps", testAdmitCaps},
		{"Handshake/AdmitRefuses", testAdmitRefuses},
		{"Handshake/WrongSecret", testWrongSecret},
		{"Handshake/ForgedMAC", testForgedMAC},
		{"Handshake/RefusalsAggregated", testRefusalsAggregated},
		{"MessageBoundaries", testBoundaries},
		{"OrderWithinStream", testOrder},
		{"IndependentStreams", testIndependence},
		{"LatencyBesideBulk", testLatencyBesideBulk},
		{"ConcurrentSenders", testConcurrentSenders},
		{"Echo", testEcho},
		{"Close", testClose},
		{"Abort", testAbort},
		{"AbortWhileStalled", testAbortWhileStalled},
		{"CloseDuringSend", testCloseDuringSend},
		{"UseAfterClose", testUseAfterClose},
		{"ContextCancel/Recv", testCancelRecv},
		{"ContextCancel/Send", testCancelSend},
		{"MessageTooLarge", testTooLarge},
		{"BadStream", testBadStream},
		{"Garbage", testGarbage},
		{"Confidentiality/Tap", testConfidentiality},
		{"Confidentiality/Relay", testRelay},
		{"Liveness/BlackHole", testBlackHole},
		{"Liveness/Frozen", testFrozen},
		{"Liveness/IdleIsAlive", testIdleIsAlive},
		{"Liveness/StalledReaderIsAlive", testStalledReaderIsAlive},
		{"DoS/SilentPeers", testSilentPeers},
		{"DoS/UnauthenticatedPeers", testUnauthenticatedPeers},
		{"DoS/WAN/Flood", testWANFlood},
		{"DoS/WAN/Reconnecting", testWANReconnecting},
	}
}

// caseTimeouts are the watchdogs of the cases that need longer than
// Options.Timeout.
var caseTimeouts = map[string]time.Duration{
	"DoS/WAN/Flood":        wanCaseTimeout,
	"DoS/WAN/Reconnecting": wanCaseTimeout,
}

// Run runs the whole suite. newT returns a fresh transport; addr is a listen
// address such as "127.0.0.1:0".
func Run(t *testing.T, newT func(t *testing.T) transport.Transport, addr string, opts ...Options) {
	var o Options
	for _, x := range opts {
		if x.Garbage != nil {
			o.Garbage = x.Garbage
		}
		if x.Timeout != 0 {
			o.Timeout = x.Timeout
		}
		if x.Liveness != 0 {
			o.Liveness = x.Liveness
		}
		if x.BlackHole != nil {
			o.BlackHole = x.BlackHole
		}
		if x.Channel != nil {
			o.Channel = x.Channel
		}
		o.Attacks = o.Attacks.merge(x.Attacks)
		o.Encrypted = o.Encrypted || x.Encrypted
		o.NarrowBlackHole = o.NarrowBlackHole || x.NarrowBlackHole
		if x.Intercept != nil {
			o.Intercept = x.Intercept
		}
	}
	o.Timeout = max(o.Timeout, minTimeout)
	if o.Liveness == 0 {
		o.Liveness = time.Second
	}
	if o.BlackHole == nil {
		o.BlackHole = RelayPath
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			checkLeaks(t)
			watchdog(t, max(o.Timeout, caseTimeouts[c.name]))
			c.fn(t, &suite{tr: newT(t), addr: addr, opts: o})
		})
	}
}

// minTimeout is the least Options.Timeout: the watchdog catches hangs, and
// a case's work takes far longer on a loaded machine with the race
// detector than alone (MessageBoundaries' 64 MiB each way took over a
// minute for quic and over 20 s for tcp with TLS and for ptcp, against
// 2 to 12 s).
const minTimeout = 3 * time.Minute

// stacks returns a dump of all goroutines.
func stacks() string {
	buf := make([]byte, 4<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// watchdog panics with a goroutine dump if the test outlives d.
func watchdog(t testing.TB, d time.Duration) {
	name := t.Name()
	tm := time.AfterFunc(d, func() {
		panic(fmt.Sprintf("transporttest: deadlock watchdog: %s still running after %v\n\n%s", name, d, stacks()))
	})
	t.Cleanup(func() { tm.Stop() })
}

// checkLeaks fails t if goroutines started during the test outlive it by
// more than a grace period. Register it first so that it runs last.
func checkLeaks(t testing.TB) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				t.Errorf("goroutine leak: %d goroutines before, %d after\n%s", before, runtime.NumGoroutine(), stacks())
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// logger collects listener log lines; it stops forwarding to t when the
// test ends, since transports may log from their own goroutines.
type logger struct {
	mu    sync.Mutex
	t     testing.TB
	done  bool
	lines []string
}

func newLogger(t testing.TB) *logger {
	l := &logger{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *logger) Logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	if !l.done {
		l.t.Logf("listener: %s", line)
	}
}

// count is the number of lines logged so far.
func (l *logger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// text is the lines logged so far.
func (l *logger) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitFor waits up to d for a line containing sub.
func (l *logger) waitFor(sub string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		for _, s := range l.lines {
			if strings.Contains(s, sub) {
				l.mu.Unlock()
				return true
			}
		}
		l.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func dialCfg(rec, maxS int) transport.DialConfig {
	return transport.DialConfig{Secret: testSecret, Name: "dialer", RecStreams: rec, MaxStreams: maxS}
}

func listenCfg(t testing.TB, rec, maxS int) (transport.ListenConfig, *logger) {
	lg := newLogger(t)
	return transport.ListenConfig{Secret: testSecret, Name: "listener", RecStreams: rec, MaxStreams: maxS, Logf: lg.Logf}, lg
}

func (s *suite) listen(t testing.TB, lc transport.ListenConfig) transport.Listener {
	t.Helper()
	ln, err := s.tr.Listen(s.addr, lc)
	if err != nil {
		t.Fatalf("Listen(%q): %v", s.addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// connect dials ln and accepts the association on the other side.
func (s *suite) connect(t testing.TB, ln transport.Listener, dc transport.DialConfig) (d, l transport.Association) {
	t.Helper()
	return connectWith(t, ln, s.dialer(ln), dc)
}

// connectWith is connect with dial (a Path's, say) in place of the
// transport's own Dial. Both ends are aborted when t ends.
func connectWith(t testing.TB, ln transport.Listener, dial dialFunc, dc transport.DialConfig) (d, l transport.Association) {
	t.Helper()
	d, l, err := dialAccept(ln, dial, dc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Abort(errTestDone)
		l.Abort(errTestDone)
	})
	return d, l
}

// dialFunc dials an association, as transport.Transport's Dial and
// Path.Dial do.
type dialFunc func(ctx context.Context, cfg transport.DialConfig) (transport.Association, error)

// dialer is the transport's Dial to ln.
func (s *suite) dialer(ln transport.Listener) dialFunc {
	return func(ctx context.Context, cfg transport.DialConfig) (transport.Association, error) {
		return s.tr.Dial(ctx, ln.Addr().String(), cfg)
	}
}

// dialAccept dials with dial and accepts on ln, within 10 s.
func dialAccept(ln transport.Listener, dial dialFunc, dc transport.DialConfig) (d, l transport.Association, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		a   transport.Association
		err error
	}
	ch := make(chan result, 1)
	go func() {
		a, err := ln.Accept(ctx)
		ch <- result{a, err}
	}()
	d, err = dial(ctx, dc)
	if err != nil {
		cancel()
		if r := <-ch; r.a != nil {
			r.a.Abort(errTestDone)
		}
		return nil, nil, fmt.Errorf("dial: %w", err)
	}
	r := <-ch
	if r.err != nil {
		d.Abort(errTestDone)
		return nil, nil, fmt.Errorf("accept: %w", r.err)
	}
	return d, r.a, nil
}

// pair returns a connected association pair with n streams.
func (s *suite) pair(t testing.TB, n int) (d, l transport.Association) {
	t.Helper()
	lc, _ := listenCfg(t, n, n)
	d, l = s.connect(t, s.listen(t, lc), dialCfg(n, n))
	if d.Streams() != n || l.Streams() != n {
		t.Fatalf("streams: dialer %d, listener %d, want %d", d.Streams(), l.Streams(), n)
	}
	return d, l
}

// independent reports whether the transport claims independent streams.
func (s *suite) independent() bool {
	if d, ok := s.tr.(transport.Describer); ok {
		return d.Capabilities().IndependentStreams
	}
	return true
}

func timeoutCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// opTimeout bounds one data exchange inside a subtest: three quarters of
// the subtest's watchdog, so a slow transport (or one under emulation) fails
// with a clear error before the watchdog fires.
func (s *suite) opTimeout() time.Duration { return s.opts.Timeout * 3 / 4 }

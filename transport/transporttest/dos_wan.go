package transporttest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/transport"
)

// The WAN DoS cases run an attack where handshakes take round trips: the
// listener in the WAN bed's braid-a (package netem), the attacker and the
// legitimate dialer both in braid-b, behind one address, across a path of
// wanSpec. On loopback a handshake ends before a flood has replaced the
// handshake slots even once; across 50 ms it needs several round trips, and
// every slot a flood can take from it while it waits is a lockout.
//
// The attacker is a process of its own (the test binary run again for the
// same subtest, with envPeer "attack"), started inside braid-b, so that all
// of its sockets are there; it stops when the case ends, after
// wanAttackFor at most, and each attack bounds what it sends.
const (
	wanSpec = "rtt=50ms"
	// wanDialRTTs bounds a legitimate association during the attack, in
	// round trips of the path: 40, 2 s at 50 ms. Unattacked, one takes 4
	// to 7 (TCP or UDP, TLS or DTLS, SCTP, then braid's own handshake). A
	// transport whose association takes longer unattacked (ptcp's sixteen
	// connections, joined four at a time: about 20) gets twice that.
	wanDialRTTs = 40
	// wanCaseTimeout is the WAN cases' watchdog: long enough to wait for
	// the bed while another test holds it (UpBed waits up to 5 minutes).
	wanCaseTimeout = 7 * time.Minute
	// wanAttackFor is how long an attacker process runs at most.
	wanAttackFor = 60 * time.Second

	roleAttack = "attack"
	// envAttackN is how many peers or sources the attacker uses.
	envAttackN = "BRAID_TRANSPORTTEST_ATTACK_N"
)

// The sizes of the WAN attacks, the reproductions.
const (
	// FloodSources is how many source ports Attacks.Flood sends from.
	FloodSources = 16
	// FloodRate is the datagrams per second of Attacks.Flood, all sources
	// together, and FloodMax how many it sends at most.
	FloodRate = 3000
	FloodMax  = 3000 * 30
	// ReconnectingPeers is how many connections Attacks.Reconnecting
	// keeps open, and ReconnectMax how many it opens at most.
	ReconnectingPeers = 300
	ReconnectMax      = 200000
)

// testWANFlood: forged handshake openers (Attacks.Flood: a replayed DTLS
// ClientHello, an SCTP INIT) from FloodSources ports of the dialer's own
// address at FloodRate must not keep a real association from coming up
// within wanDialRTTs round trips of a 50 ms path.
func testWANFlood(t *testing.T, s *suite) {
	AttackAcrossBed(t, s.tr, s.opts.Attacks.Flood, FloodSources, "Flood")
}

// testWANReconnecting: ReconnectingPeers idle connections from the
// dialer's own address, each opened again as soon as the listener drops it
// (Attacks.Reconnecting), must not keep a real association from coming up
// within wanDialRTTs round trips of a 50 ms path.
func testWANReconnecting(t *testing.T, s *suite) {
	AttackAcrossBed(t, s.tr, s.opts.Attacks.Reconnecting, ReconnectingPeers, "Reconnecting")
}

// AttackAcrossBed runs attack with n peers against a listener of tr across
// the WAN bed (see the WAN DoS cases in dos_wan.go) and requires that each
// legitimate dial made meanwhile associates within wanDialRTTs round trips,
// or twice an unattacked dial if that is longer.
// It must be called from a test that Run's peer mechanism can re-run: the
// test binary is started again with -test.run naming t, and in that process
// AttackAcrossBed plays the attacker. Without the bed (not root) it skips.
func AttackAcrossBed(t *testing.T, tr transport.Transport, attack Attack, n int, name string) {
	if attack == nil {
		t.Skipf("transport %s supplies no Options.Attacks.%s attacker", tr.Name(), name)
	}
	if peerRole() == roleAttack {
		runAttacker(t, attack)
		return
	}
	bed := UpBed(t, wanSpec)
	lc, _ := listenCfg(t, 2, 2)
	lc.Logf = func(string, ...any) {} // a line per dropped peer, thousands
	var ln transport.Listener
	if err := netem.InNS(netem.NSA, func() (err error) {
		ln, err = tr.Listen("0.0.0.0:0", lc)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a0, _ := netem.PathAddrs(0)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(a0.String(), port)
	dial := func(ctx context.Context, cfg transport.DialConfig) (a transport.Association, err error) {
		err = netem.InNS(netem.NSB, func() error {
			a, err = tr.Dial(ctx, addr, cfg)
			return err
		})
		return a, err
	}
	t0 := time.Now()
	d, l := connectWith(t, ln, dial, dialCfg(2, 2))
	unattacked := time.Since(t0)
	echoOnce(t, d, l, 1)
	bound := max(wanDialRTTs*bed.Spec().Paths[0].RTT(), 2*unattacked)
	t.Logf("unattacked, an association came up in %v across %s; bound during the attack %v", unattacked.Round(time.Millisecond), wanSpec, bound.Round(time.Millisecond))

	before := bed.Stats()[0].BA
	start := time.Now()
	p := startAttacker(t, addr, n)
	t.Logf("attacker (%d) under way after %v", n, time.Since(start).Round(time.Millisecond))
	var took []time.Duration
	for i := range dosDials {
		if i > 0 {
			time.Sleep(dosDialGap)
		}
		t0 := time.Now()
		d, l, err := dialAccept(ln, dial, dialCfg(2, 2))
		took = append(took, time.Since(t0))
		if err != nil {
			t.Errorf("dial %d during the attack failed after %v: %v", i, took[i].Round(time.Millisecond), err)
			continue
		}
		echoOnce(t, d, l, 1)
		d.Abort(errTestDone)
		l.Abort(errTestDone)
		t.Logf("dial %d during the attack associated in %v", i, took[i].Round(time.Millisecond))
		if took[i] > 2*bound {
			t.Errorf("dial %d during the attack took %v, more than twice %v (%d round trips, or twice an unattacked dial)", i, took[i].Round(time.Millisecond), bound.Round(time.Millisecond), wanDialRTTs)
		}
	}
	// The median is held to the bound, each dial to twice it: with both
	// cores busy one dial of three took 2.26 s against a 2.1 s bound while
	// the others took 1.5 s; the lockout this guards against kept every
	// dial out for 15 s.
	slices.Sort(took)
	if m := took[len(took)/2]; m > bound {
		t.Errorf("the median dial during the attack took %v, more than %v (%d round trips, or twice an unattacked dial)", m.Round(time.Millisecond), bound.Round(time.Millisecond), wanDialRTTs)
	}
	after := bed.Stats()[0].BA
	p.stop(t)
	secs := time.Since(start).Seconds()
	t.Logf("during the attack braid-b sent %d packets (%.0f/s) to the listener's side", after.InPackets-before.InPackets,
		float64(after.InPackets-before.InPackets)/secs)
}

// attackerProc is a running attacker process.
type attackerProc struct {
	stdin  io.WriteCloser
	exited chan error
	out    *lockedBuffer
}

// startAttacker starts the attacker process for t's subtest inside braid-b
// and waits until its attack is under way.
func startAttacker(t *testing.T, addr string, n int) *attackerProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wanAttackFor+30*time.Second)
	t.Cleanup(cancel)
	cmd := netem.Command(ctx, netem.NSB, os.Args[0], "-test.run="+subtestPattern(t.Name()), "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), envPeer+"="+roleAttack, envPeerAddr+"="+addr, envAttackN+"="+strconv.Itoa(n))
	ready := make(chan string, 1)
	p := &attackerProc{exited: make(chan error, 1), out: &lockedBuffer{}}
	cmd.Stdout = &readyWriter{ready: ready, rest: p.out}
	cmd.Stderr = p.out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the attacker process: %v", err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	select {
	case <-ready:
		return p
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("attacker process exited before its attack was under way (%v):\n%s", err, p.out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("attacker not under way after 60s:\n%s", p.out.String())
	}
	return nil
}

// stop ends the attack (closing the process's stdin) and waits for the
// process; it may be called again.
func (p *attackerProc) stop(t *testing.T) {
	_ = p.stdin.Close()
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(30 * time.Second):
		t.Errorf("attacker process still running 30s after it was told to stop:\n%s", p.out.String())
	}
}

// runAttacker plays the attacker in its own process: it runs attack with
// the parent's address and size, says when it is under way, and stops when
// its parent closes its stdin (or dies), or after wanAttackFor.
func runAttacker(t *testing.T, attack Attack) {
	n, err := strconv.Atoi(os.Getenv(envAttackN))
	if err != nil {
		t.Fatalf("attacker: %s: %v", envAttackN, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wanAttackFor)
	defer cancel()
	stop, err := attack(ctx, os.Getenv(envPeerAddr), n)
	if err != nil {
		t.Fatalf("attacker: %v", err)
	}
	defer stop()
	fmt.Printf("%sattacking %s\n", readyPrefix, os.Getenv(envPeerAddr))
	parentGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(parentGone)
	}()
	select {
	case <-parentGone:
	case <-ctx.Done():
	}
}

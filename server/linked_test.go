package server_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/testlog"
	"github.com/braidhq/braid/internal/testport"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/wire"
)

// Linked workers: the registry's settings that link a worker. The
// association's liveness bound is 200 ms, so its idle bound is 2 s (the
// default idle factor, 10), which with its half and an interval (3.1 s)
// is within the 4 s heartbeat timeout; heartbeats every 100 ms, 200 ms for
// a claim to wait.
var linkedCfg = server.Config{HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: 4 * time.Second,
	Liveness: 200 * time.Millisecond}

// silentWorker is a worker process that holds an association with the
// server and never heartbeats after registering: alive only by its
// association.
type silentWorker struct {
	info     api.WorkerInfo
	ln       transport.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	admitted atomic.Int64 // associations the server opened, counted at the handshake
}

func startSilentWorker(t *testing.T, c *client.Client, name string, epoch uint64, liveness time.Duration) *silentWorker {
	t.Helper()
	sw := listenSilent(t, name, epoch, "127.0.0.1:0", liveness)
	if _, err := c.RegisterWorker(testCtx(t), sw.info); err != nil {
		t.Fatal(err)
	}
	return sw
}

// listenSilent starts a silent worker's process, named name and epoch in
// its handshakes, listening at addr with liveness bound liveness, not yet
// registered.
func listenSilent(t *testing.T, name string, epoch uint64, addr string, liveness time.Duration) *silentWorker {
	t.Helper()
	sw := &silentWorker{}
	ln, err := tcpn.New(tcpn.Config{}).Listen(addr, transport.ListenConfig{Secret: registrySecret, Name: name, ID: name, Epoch: epoch,
		RecStreams: 1, MaxStreams: 1, Liveness: liveness,
		Admit: func(_ transport.PeerInfo, n int) (int, func(), error) {
			sw.admitted.Add(1)
			return n, func() {}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sw.info, sw.ln, sw.cancel = process(name, epoch, ""), ln, cancel
	sw.info.Endpoints[0].Addr = ln.Addr().String()
	sw.wg.Go(func() { sw.accept(ctx) })
	t.Cleanup(sw.kill)
	return sw
}

// waitAdmitted waits until the server has opened n associations with sw.
func (sw *silentWorker) waitAdmitted(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // the server redials every second
	for sw.admitted.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server opened %d associations with %s in a minute; want %d", sw.admitted.Load(), sw.info.Name, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// accept serves the server's associations: a lease, then it reads and
// drops the wants.
func (sw *silentWorker) accept(ctx context.Context) {
	for {
		a, err := sw.ln.Accept(ctx)
		if err != nil {
			return
		}
		sw.wg.Go(func() {
			defer a.Abort(errors.New("silent worker killed"))
			if a.Send(ctx, 0, wire.AppendLease(nil, wire.Lease{Streams: 1, Seq: 1})) != nil {
				return
			}
			for {
				if _, err := a.Recv(ctx, 0); err != nil {
					return
				}
			}
		})
	}
}

// kill ends the process: its association and its listener go, as the
// kernel closes a killed process's sockets.
func (sw *silentWorker) kill() {
	sw.cancel()
	sw.ln.Close()
	sw.wg.Wait()
}

// A linked worker killed and started again on the same address (a fixed
// --listen port) gets its name back: the server's redial for the old
// registration reaches the new process before it registers, and must not
// take it for the old one (the handshake names another epoch), which
// would keep the old registration up, linked, and refuse the new one.
func TestLinkedWorkerRestartedOnItsPort(t *testing.T) {
	c, logs := startRegistry(t, linkedCfg)
	ctx := testCtx(t)
	addr := testport.Addr(t) // outside the ephemeral range: nothing takes it between the kill and the restart
	old := listenSilent(t, "w1", 1, addr, linkedCfg.Liveness)
	if _, err := c.RegisterWorker(ctx, old.info); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "w1", api.WorkerUp)
	old.kill()
	restarted := listenSilent(t, "w1", 2, addr, linkedCfg.Liveness)
	restarted.waitAdmitted(t, 1) // the redial for the old registration reached it
	asked := time.Now()
	if _, err := c.RegisterWorker(ctx, restarted.info); err != nil {
		t.Fatalf("a worker restarted on its address: %v; want its name back\n%s", err, logs)
	}
	if d := time.Since(asked); d > 10*time.Second {
		t.Errorf("taking a killed worker's name took %v; want about two heartbeat intervals (200 ms)", d)
	}
	waitState(t, c, "w1", api.WorkerUp)
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 2 {
		t.Fatalf("w1 is epoch %d; want the restarted process's, 2", w.Info.Epoch)
	}
}

// atDeadWorkersAddress starts a registry and a linked worker w1, kills w1,
// and starts a process named w2 (not registered) listening where w1 did,
// on a port outside the ephemeral range (testport), which nothing else
// takes in between.
func atDeadWorkersAddress(t *testing.T) (*client.Client, *testlog.Buffer, *silentWorker) {
	t.Helper()
	c, logs := startRegistry(t, linkedCfg)
	old := listenSilent(t, "w1", 1, testport.Addr(t), linkedCfg.Liveness)
	if _, err := c.RegisterWorker(testCtx(t), old.info); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "w1", api.WorkerUp)
	old.kill()
	return c, logs, listenSilent(t, "w2", 7, old.info.Endpoints[0].Addr, linkedCfg.Liveness)
}

// A process of another name that listens where a killed linked worker
// did does not keep the dead worker's registration up: the worker is
// taken for dead by its heartbeat timeout.
func TestLinkedWorkerAddressTakenByAnother(t *testing.T) {
	c, logs, other := atDeadWorkersAddress(t)
	other.waitAdmitted(t, 1)
	waitState(t, c, "w1", api.WorkerDown)
	if !strings.Contains(logs.String(), `msg="worker missed its heartbeats; taking its units back" component=dispatch worker=w1`) {
		t.Errorf("w1 was not taken down by the heartbeat timeout:\n%s", logs)
	}
}

// A worker registered at an address another worker has registered since
// is not dialed there: the stale registration would cost the new holder
// its association at every redial until it timed out (a real worker takes
// a new association from a server for a replacement of its own). The old
// registration shows why, and goes down at its heartbeat timeout.
func TestWorkerAddressRegisteredByAnother(t *testing.T) {
	c, _, other := atDeadWorkersAddress(t)
	if _, err := c.RegisterWorker(testCtx(t), other.info); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "w2", api.WorkerUp)
	base := other.admitted.Load() // w2's own, and the server's dials for w1 before w2 registered
	waitState(t, c, "w1", api.WorkerDown)
	if n := other.admitted.Load() - base; n > 1 { // one dial for w1 may have been under way
		t.Errorf("the server dialed w1 %d times at the address w2 registered since; want none", n)
	}
	if w, _ := listed(t, c, "w1"); !strings.Contains(w.Error, "worker w2 registered its address") {
		t.Errorf("w1's error %q does not say w2 took its address", w.Error)
	}
}

// A worker whose association is up is told the linked interval, and is
// not taken for dead for want of heartbeats while the association lives:
// silent over HTTP for twice the heartbeat timeout, it stays up. Once the
// association ends (the process killed), the heartbeat timeout applies
// again and the worker is taken for dead.
func TestLinkedWorkerNeedsNoHeartbeats(t *testing.T) {
	c, logs := startRegistry(t, linkedCfg)
	ctx := testCtx(t)
	sw := startSilentWorker(t, c, "w1", 1, linkedCfg.Liveness)
	waitState(t, c, "w1", api.WorkerUp)
	beat, err := c.Beat(ctx, "w1", 1)
	if err != nil || beat.HeartbeatMS != 100 || beat.LinkedHeartbeatMS != 3000 {
		t.Fatalf("heartbeat answer %+v (%v); want 100 ms, linked 3000 ms", beat, err)
	}
	time.Sleep(2 * linkedCfg.HeartbeatTimeout) // a non-event: nothing may happen meanwhile
	if w, _ := listed(t, c, "w1"); w.State != api.WorkerUp {
		t.Fatalf("a linked worker silent over HTTP for %v is %s; want up (its association speaks for it)\n%s",
			2*linkedCfg.HeartbeatTimeout, w.State, logs)
	}
	sw.kill()
	waitState(t, c, "w1", api.WorkerDown)
	if !strings.Contains(logs.String(), `msg="worker missed its heartbeats; taking its units back" component=dispatch worker=w1`) {
		t.Errorf("the killed worker was not taken down by the heartbeat timeout:\n%s", logs)
	}
}

// A linked holder of a name, which sends no heartbeats, keeps its name:
// the registration of a second process under it is refused, since the
// holder's association is up when the wait is over. Killed, it gives the
// name up to the process started in its place.
func TestLinkedWorkerKeepsItsName(t *testing.T) {
	c, _ := startRegistry(t, linkedSlowCfg) // the holder has 2 s to answer the probe
	ctx := testCtx(t)
	sw := startSilentWorker(t, c, "w1", 1, linkedSlowCfg.Liveness)
	waitState(t, c, "w1", api.WorkerUp)
	second := process("w1", 2, "10")
	_, err := c.RegisterWorker(ctx, second)
	if apiCode(err) != api.CodeConflict {
		t.Fatalf("a second process under a linked worker's name: %v; want a conflict", err)
	}
	if !strings.Contains(err.Error(), "linked: its data-plane association with this server is up") {
		t.Errorf("the refusal says %q; want it to say the holder is linked (its last heartbeat may be minutes old)", err)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 1 {
		t.Fatalf("after the refusal w1 is epoch %d; want the holder's, 1", w.Info.Epoch)
	}
	sw.kill()
	asked := time.Now()
	if _, err := c.RegisterWorker(ctx, second); err != nil {
		t.Fatalf("a new process under a killed linked worker's name: %v", err)
	}
	if d := time.Since(asked); d > linkedSlowCfg.HeartbeatTimeout/2 {
		t.Errorf("taking a killed worker's name took %v; want about two heartbeat intervals (1 s), not the heartbeat timeout", d)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 2 {
		t.Fatalf("w1 is epoch %d; want the new process's, 2", w.Info.Epoch)
	}
}

// linkedSlowCfg links workers as linkedCfg does, with bounds that leave a
// loaded machine time to answer: liveness 1 s (idle bound 10 s),
// heartbeats every 500 ms, so a claim waits 1 s for a heartbeat.
var linkedSlowCfg = server.Config{HeartbeatInterval: 500 * time.Millisecond, HeartbeatTimeout: 20 * time.Second,
	Liveness: time.Second}

// stallProxy relays TCP connections to target until stalled, then holds
// what it reads in either direction: a data plane that stopped carrying
// anything while both ends live.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled atomic.Bool
	heard   atomic.Int64 // Unix ns of the last bytes relayed from the worker
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target}
	p.wg.Go(p.serve)
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Go(func() { p.relay(u, c, nil) })
		p.wg.Go(func() { p.relay(c, u, &p.heard) })
	}
}

// relay copies from src to dst, holding what it read while stalled; it
// records when it last relayed anything in sent, if not nil.
func (p *stallProxy) relay(dst, src net.Conn, sent *atomic.Int64) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		for p.stalled.Load() && err == nil {
			time.Sleep(5 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			if sent != nil {
				sent.Store(time.Now().UnixNano())
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *stallProxy) close() {
	p.ln.Close()
	p.stalled.Store(false)
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// A linked holder whose data plane stalls keeps its name if it heartbeats
// once its association ends: a registration under its name probes the
// association, which the stall ends; the claim then waits for the
// holder's heartbeat from that end, not from the association's last word
// (an idle ping from before the registration, which once let the
// newcomer in at the association's end).
func TestLinkedHolderStalledKeepsItsName(t *testing.T) {
	c, logs := startRegistry(t, linkedSlowCfg)
	ctx := testCtx(t)
	sw := listenSilent(t, "w1", 1, "127.0.0.1:0", linkedSlowCfg.Liveness)
	proxy := startStallProxy(t, sw.ln.Addr().String())
	sw.info.Endpoints[0].Addr = proxy.ln.Addr().String()
	if _, err := c.RegisterWorker(ctx, sw.info); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "w1", api.WorkerUp)
	// The link goes idle: the worker pings it every 5 s instead of every
	// 500 ms, and the server waits 10 s after its last ping. Stalled then,
	// the association lasts until the probe's 1 s bound ends it, and its
	// last word is more than a claim's wait (1 s) before the claim.
	deadline := time.Now().Add(time.Minute)
	for time.Since(time.Unix(0, proxy.heard.Load())) < 1500*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("the worker's link did not go idle within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	proxy.stalled.Store(true)
	claimed := make(chan error, 1)
	go func() {
		_, err := c.RegisterWorker(ctx, process("w1", 2, "10"))
		claimed <- err
	}()
	for { // the holder learns of its association's end, and beats at once
		if w, _ := listed(t, c, "w1"); w.State != api.WorkerUp || w.Info.Epoch != 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Beat(ctx, "w1", 1); err != nil {
		t.Fatalf("the holder's heartbeat once its association ended: %v; want it answered\n%s", err, logs)
	}
	if err := <-claimed; apiCode(err) != api.CodeConflict {
		t.Fatalf("a second process under the name of a holder whose association stalled and which beat at once: %v; want a conflict\n%s", err, logs)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 1 {
		t.Fatalf("w1 is epoch %d; want the holder's, 1", w.Info.Epoch)
	}
}

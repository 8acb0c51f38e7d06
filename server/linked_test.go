package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcpn"
	"github.com/braidhq/braid/wire"
)

// Linked workers: the registry's settings that link a worker. The
// association's liveness bound is 200 ms, so its idle bound is 2 s (the
// default idle factor, 10), within the 3 s heartbeat timeout with a
// quarter to spare; heartbeats every 100 ms, 200 ms for a claim to wait.
var linkedCfg = server.Config{HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: 3 * time.Second,
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

func startSilentWorker(t *testing.T, c *client.Client, name string, epoch uint64) *silentWorker {
	t.Helper()
	sw := listenSilent(t, name, epoch, "127.0.0.1:0")
	if _, err := c.RegisterWorker(testCtx(t), sw.info); err != nil {
		t.Fatal(err)
	}
	return sw
}

// listenSilent starts a silent worker's process, named name and epoch in
// its handshakes, listening at addr, not yet registered.
func listenSilent(t *testing.T, name string, epoch uint64, addr string) *silentWorker {
	t.Helper()
	sw := &silentWorker{}
	ln, err := tcpn.New(tcpn.Config{}).Listen(addr, transport.ListenConfig{Secret: registrySecret, Name: name, ID: name, Epoch: epoch,
		RecStreams: 1, MaxStreams: 1, Liveness: linkedCfg.Liveness,
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
	old := startSilentWorker(t, c, "w1", 1)
	waitState(t, c, "w1", api.WorkerUp)
	addr := old.info.Endpoints[0].Addr
	old.kill()
	restarted := listenSilent(t, "w1", 2, addr)
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

// A process of another name that listens where a killed linked worker
// did does not keep the dead worker's registration up: the worker is
// taken for dead by its heartbeat timeout.
func TestLinkedWorkerAddressTakenByAnother(t *testing.T) {
	c, logs := startRegistry(t, linkedCfg)
	old := startSilentWorker(t, c, "w1", 1)
	waitState(t, c, "w1", api.WorkerUp)
	addr := old.info.Endpoints[0].Addr
	old.kill()
	other := listenSilent(t, "w2", 7, addr)
	other.waitAdmitted(t, 1)
	waitState(t, c, "w1", api.WorkerDown)
	if !strings.Contains(logs.String(), `msg="worker missed its heartbeats; taking its units back" component=dispatch worker=w1`) {
		t.Errorf("w1 was not taken down by the heartbeat timeout:\n%s", logs)
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
	sw := startSilentWorker(t, c, "w1", 1)
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
	c, _ := startRegistry(t, linkedCfg)
	ctx := testCtx(t)
	sw := startSilentWorker(t, c, "w1", 1)
	waitState(t, c, "w1", api.WorkerUp)
	second := process("w1", 2, "10")
	if _, err := c.RegisterWorker(ctx, second); apiCode(err) != api.CodeConflict {
		t.Fatalf("a second process under a linked worker's name: %v; want a conflict", err)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 1 {
		t.Fatalf("after the refusal w1 is epoch %d; want the holder's, 1", w.Info.Epoch)
	}
	sw.kill()
	asked := time.Now()
	if _, err := c.RegisterWorker(ctx, second); err != nil {
		t.Fatalf("a new process under a killed linked worker's name: %v", err)
	}
	if d := time.Since(asked); d > 10*time.Second {
		t.Errorf("taking a killed worker's name took %v; want about two heartbeat intervals (200 ms), not the heartbeat timeout", d)
	}
	if w, _ := listed(t, c, "w1"); w.Info.Epoch != 2 {
		t.Fatalf("w1 is epoch %d; want the new process's, 2", w.Info.Epoch)
	}
}

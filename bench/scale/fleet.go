package scale

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/version"
	"github.com/braidhq/braid/wire"
)

// fleet is the simulated workers and what they share: the transport, one
// HTTP client pool, and the tally of the units they answered.
type fleet struct {
	cfg     Config
	tr      transport.Transport
	secret  []byte
	cl      *client.Client // worker-token calls, no retry of its own
	workers []*simWorker

	answered bitset       // units of the job answered at least once
	results  atomic.Int64 // results sent, duplicates included
	assocs   atomic.Int64 // associations up now
	beats    atomic.Int64 // heartbeats answered
	regs     atomic.Int64 // registrations accepted
	interval atomic.Int64 // the heartbeat interval the server asks for, ns

	firstReg atomic.Int64 // Unix ns of the first registration sent
	wg       sync.WaitGroup
}

// simWorker is one simulated worker: a name, a data-plane listener, and
// the goroutines that accept and serve the server's association and
// heartbeat.
type simWorker struct {
	f     *fleet
	name  string
	epoch uint64
	mu    sync.Mutex         // guards ln, addr, info and link
	ln    transport.Listener // nil while an association runs (over TCP)
	addr  string             // the data-plane address it listens on
	info  api.WorkerInfo
	link  <-chan struct{} // the Done of its association while one is up
}

// httpPool bounds the connections the whole fleet opens to the server.
const httpPool = 256

func newFleet(cfg Config, base string, secret []byte) (*fleet, error) {
	tr, err := transports.New(cfg.Transport, transports.Options{})
	if err != nil {
		return nil, fmt.Errorf("scale: %w", err)
	}
	ht := http.DefaultTransport.(*http.Transport).Clone()
	ht.MaxIdleConnsPerHost, ht.MaxConnsPerHost = httpPool, httpPool
	hc := &http.Client{Transport: ht, Timeout: time.Minute}
	f := &fleet{cfg: cfg, tr: tr, secret: secret, answered: newBitset(cfg.Units),
		cl: client.New(base).WithHTTPClient(hc).WithSecret(secret).WithRetry(client.Retry{For: -1})}
	f.interval.Store(int64(time.Second))
	epoch := uint64(time.Now().UnixNano())
	for i := range cfg.Workers {
		w, err := f.newWorker(fmt.Sprintf("sim-%05d", i), epoch+uint64(i))
		if err != nil {
			f.close()
			return nil, err
		}
		f.workers = append(f.workers, w)
	}
	return f, nil
}

func (f *fleet) newWorker(name string, epoch uint64) (*simWorker, error) {
	t := f.cfg.Threads
	w := &simWorker{f: f, name: name, epoch: epoch}
	ln, err := f.tr.Listen("127.0.0.1:0", w.listenConfig()) // before the others start: no lock needed
	if err != nil {
		return nil, fmt.Errorf("scale: worker %s: listen: %w", name, err)
	}
	w.ln, w.addr = ln, ln.Addr().String()
	w.info = api.WorkerInfo{Name: name, Cores: 1, MaxThreads: t, FreeThreads: t, LeasedThreads: t, Ops: []string{"noop"},
		Epoch: epoch, Version: version.String(),
		Endpoints: []api.Endpoint{{Transport: f.cfg.Transport, Addr: w.addr}}}
	return w, nil
}

// close stops accepting; associations end with their server.
func (f *fleet) close() {
	for _, w := range f.workers {
		w.setListener(nil)
	}
}

// setListener replaces the worker's listener, closing the old one.
func (w *simWorker) setListener(ln transport.Listener) {
	w.mu.Lock()
	old := w.ln
	w.ln = ln
	w.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

func (w *simWorker) listener() transport.Listener {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ln
}

// run registers every worker, at most httpPool at a time, and keeps each
// heartbeating and serving until ctx ends; it returns once every worker
// has been registered once (or ctx ended). wait waits for the goroutines.
func (f *fleet) run(ctx context.Context) error {
	sem := make(chan struct{}, httpPool)
	f.firstReg.Store(time.Now().UnixNano())
	for _, w := range f.workers {
		f.wg.Go(func() { w.accept(ctx) })
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.wg.Go(func() {
			err := w.register(ctx)
			<-sem
			if err == nil {
				w.heartbeat(ctx)
			}
		})
	}
	return nil
}

func (f *fleet) wait() { f.wg.Wait() }

// register registers the worker, trying again while the server is
// unreachable or busy; it fails only when ctx ends or the server refuses
// the worker for good.
func (w *simWorker) register(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		w.mu.Lock()
		info := w.info
		w.mu.Unlock()
		reg, err := w.f.cl.RegisterWorker(ctx, info)
		if err == nil {
			w.f.regs.Add(1)
			if reg.HeartbeatMS > 0 {
				w.f.interval.Store(int64(reg.HeartbeatMS) * int64(time.Millisecond))
			}
			return nil
		}
		if client.Rejected(err) || ctx.Err() != nil {
			return fmt.Errorf("scale: worker %s: register: %w", w.name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff + rand.N(backoff)):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// heartbeat beats at the server's interval, the first after a random part
// of it so that the fleet's beats spread out, and registers again when the
// server has forgotten the worker (it restarted). While the server takes
// its association for its sign of life (api.Beat.LinkedHeartbeatMS) it
// beats at the linked interval, as a worker does, and at once when the
// association ends; the first linked wait is a random part of it, as a
// fleet whose workers came up over time would beat.
func (w *simWorker) heartbeat(ctx context.Context) {
	wait := time.Duration(rand.Int64N(max(w.f.interval.Load(), 1)))
	var ended <-chan struct{}
	wasLinked := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-ended:
		}
		wait, ended = time.Duration(w.f.interval.Load()), nil
		beat, err := w.f.cl.Beat(ctx, w.name, w.epoch)
		var ae *api.Error
		switch {
		case err == nil:
			w.f.beats.Add(1)
			if beat.HeartbeatMS > 0 {
				wait = time.Duration(beat.HeartbeatMS) * time.Millisecond
				w.f.interval.Store(int64(wait))
			}
			if linked := time.Duration(beat.LinkedHeartbeatMS) * time.Millisecond; linked > 0 {
				if ended = w.linked(); ended != nil {
					wait = linked
					if !wasLinked {
						wait = time.Duration(rand.Int64N(int64(linked)))
					}
				}
			}
			wasLinked = ended != nil
		case errors.As(err, &ae) && ae.Code == api.CodeNotFound:
			if w.register(ctx) != nil {
				return
			}
		}
	}
}

// accept serves the associations the server opens, one at a time as a
// server keeps one per worker (a restarted server's new one comes once
// the old has ended with its process). Over TCP the worker stops
// listening while its association runs and listens again on the same
// address after, so that the fleet holds one descriptor per worker, not
// two: 10,000 workers then fit a limit of 20,000 open files, which a
// process that may not raise its hard limit cannot exceed.
func (w *simWorker) accept(ctx context.Context) {
	for ctx.Err() == nil {
		ln := w.listener()
		if ln == nil {
			if ln = w.relisten(ctx); ln == nil {
				return
			}
		}
		a, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() == nil && w.listener() == ln {
				w.setListener(nil)
				_ = sleep(ctx, 100*time.Millisecond)
			}
			continue
		}
		if w.f.oneConnPerStream() {
			w.setListener(nil)
		}
		w.serve(ctx, a)
	}
}

// relisten listens again on the worker's address; if another socket took
// its port meanwhile, on a new one, which it announces to the server (a
// registration of the same process with a new endpoint, which the server
// dials). nil once ctx ends.
func (w *simWorker) relisten(ctx context.Context) transport.Listener {
	w.mu.Lock()
	addr := w.addr
	w.mu.Unlock()
	for tries := 0; ctx.Err() == nil; tries++ {
		if tries == 20 {
			addr = "127.0.0.1:0"
		}
		ln, err := w.f.tr.Listen(addr, w.listenConfig())
		if err != nil {
			_ = sleep(ctx, 100*time.Millisecond) // the port is busy for a moment yet
			continue
		}
		w.setListener(ln)
		if tries >= 20 {
			w.mu.Lock()
			w.addr = ln.Addr().String()
			w.info.Endpoints = []api.Endpoint{{Transport: w.f.cfg.Transport, Addr: w.addr}}
			w.mu.Unlock()
			_ = w.register(ctx)
		}
		return ln
	}
	return nil
}

// oneConnPerStream says the transport's listener is a TCP socket apart from
// its associations' connections.
func (f *fleet) oneConnPerStream() bool {
	switch f.cfg.Transport {
	case "tcpn", "tcp", "ptcp":
		return true
	}
	return false
}

func (w *simWorker) listenConfig() transport.ListenConfig {
	t := w.f.cfg.Threads
	return transport.ListenConfig{Secret: w.f.secret, Name: w.name, ID: w.name, Epoch: w.epoch, RecStreams: t, MaxStreams: t,
		Liveness: w.f.cfg.Liveness}
}

// setLink records the Done of the worker's association (nil: none).
func (w *simWorker) setLink(done <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.link = done
}

// linked is the Done of the worker's association, nil if none is up.
func (w *simWorker) linked() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.link
}

// serve lends the server every thread, then answers units on every stream
// until the association ends.
func (w *simWorker) serve(ctx context.Context, a transport.Association) {
	n := a.Streams()
	if err := a.Send(ctx, 0, wire.AppendLease(nil, wire.Lease{Streams: n, Seq: 1})); err != nil {
		a.Abort(err)
		return
	}
	w.f.assocs.Add(1)
	defer w.f.assocs.Add(-1)
	w.setLink(a.Done())
	defer w.setLink(nil)
	var wg sync.WaitGroup
	for s := 1; s < n; s++ {
		wg.Go(func() { w.answer(ctx, a, s) })
	}
	w.answer(ctx, a, 0)
	a.Abort(errors.New("scale: stream closed"))
	wg.Wait()
}

// answer runs the units of one stream: each is answered with its input as
// output (a no-op), after the modelled compute time if there is one.
// Stream 0 also carries the server's wants, which a lone server's worker
// has no use for. Without a compute time the units already received are
// answered together, their results sent as one batch
// (transport.SendBatch), as a worker would that found them all queued.
func (w *simWorker) answer(ctx context.Context, a transport.Association, s int) {
	var msgs, results [][]byte
	var bufs [][]byte // results' encodings, reused
	var idxs []int    // the units of results
	batch := maxAnswerBatch
	if w.f.cfg.Compute > 0 {
		batch = 1 // each result as its unit ends, as a worker thread sends it
	}
	for {
		var err error
		if msgs, err = transport.RecvBatch(ctx, a, s, msgs[:0], batch); err != nil {
			return
		}
		results, idxs = results[:0], idxs[:0]
		for _, msg := range msgs {
			if len(bufs) == len(results) {
				bufs = append(bufs, nil)
			}
			res, idx, ok := w.run(a, s, msg, bufs[len(results)][:0])
			if !ok {
				return
			}
			if res != nil {
				bufs[len(results)] = res
				results, idxs = append(results, res), append(idxs, idx)
			}
		}
		if transport.SendBatch(ctx, a, s, results) != nil {
			return
		}
		w.f.results.Add(int64(len(results)))
		for _, i := range idxs {
			w.f.answered.set(i)
		}
	}
}

// maxAnswerBatch bounds the units a simulated worker answers together.
const maxAnswerBatch = 64

// run runs the unit msg and appends its result to buf; a want gives no
// result (res nil). A message that is neither aborts the association and
// returns !ok.
func (w *simWorker) run(a transport.Association, s int, msg, buf []byte) (res []byte, idx int, ok bool) {
	switch wire.KindOf(msg) {
	case wire.KindWant:
		if _, err := wire.ParseWant(msg); err != nil || s != 0 {
			a.Abort(fmt.Errorf("scale: bad want on stream %d: %v", s, err))
			return nil, 0, false
		}
		return nil, 0, true
	case wire.KindUnit:
	default:
		a.Abort(fmt.Errorf("scale: %s message on stream %d", wire.KindOf(msg), s))
		return nil, 0, false
	}
	start := time.Now()
	u, err := wire.ParseUnit(msg)
	if err != nil {
		a.Abort(err)
		return nil, 0, false
	}
	if d := w.f.cfg.Compute; d > 0 {
		time.Sleep(d)
	}
	r := wire.Result{ID: u.ID, Output: u.Input, Compute: max(time.Since(start), time.Microsecond)}
	r.Rate = float64(a.Streams()) * float64(time.Second) / float64(r.Compute)
	return wire.AppendResult(buf, &r), int(u.Index), true
}

// bitset is a set of unit indexes safe for concurrent use.
type bitset []atomic.Uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int) {
	if i < 0 || i/64 >= len(b) {
		return
	}
	w, bit := &b[i/64], uint64(1)<<(i%64)
	for {
		old := w.Load()
		if old&bit != 0 || w.CompareAndSwap(old, old|bit) {
			return
		}
	}
}

// count is how many indexes below n are set.
func (b bitset) count(n int) int {
	c := 0
	for i := range n {
		if b[i/64].Load()&(1<<(i%64)) != 0 {
			c++
		}
	}
	return c
}

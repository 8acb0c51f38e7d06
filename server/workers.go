package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/scheduler"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/wire"
)

// workerConn is a registered worker and its association. The dispatch loop
// owns it.
type workerConn struct {
	info         api.WorkerInfo
	state        string
	transport    string
	assoc        transport.Association
	queues       []chan []byte // per stream: encoded units for the sender
	wantQ        chan []byte   // cap 1: the latest want, not yet sent (stream 0)
	gen          int           // bumped per association; stale events carry an old one
	lease        int           // streams the worker lends us now (docs/leases.md)
	leaseSeq     uint32        // the sequence number of that lease
	want         wire.Want     // the demand last queued for the worker
	flights      []uint64      // the ids of its units in flight (d.inflight), oldest first
	dialing      bool
	beat         chan struct{} // closed and replaced on each sign of life the loop sees (seen)
	live         *liveness     // its process's signs of life, in the roster
	retry        *time.Timer
	registeredAt time.Time
	unitsDone    int
	errText      string
	view         *workerView // its entry in the workers list (views.go); nil once forgotten
	dirty        bool        // its record is to be published at the end of the loop's step
}

// workerStatus is w as the API shows it, with the units the core has
// there now (on the loop).
func (d *dispatcher) workerStatus(w *workerConn) api.Worker {
	s := api.Worker{Info: w.info, State: w.state, Transport: w.transport, UnitsDone: w.unitsDone,
		Error: w.errText, RegisteredAt: w.registeredAt, LastSeen: w.live.shownSeen(time.Now()),
		BusyThreads: d.core.BusyStreams(w.info.Name), InFlightUnits: d.core.InFlight(w.info.Name)}
	if w.assoc != nil {
		s.Streams, s.Lease = w.assoc.Streams(), w.lease
	}
	return s
}

// close ends the worker's association and stops its retries.
func (w *workerConn) close(reason error) {
	if w.retry != nil {
		w.retry.Stop()
	}
	if w.assoc != nil {
		w.assoc.Abort(reason)
	}
}

// register adds or updates a worker (on the loop). A registration from
// another process than the one registered (a new epoch) takes the name
// over: callers decide first whether it may (claim).
func (d *dispatcher) register(info api.WorkerInfo) {
	now := time.Now()
	w := d.workers[info.Name]
	if w == nil {
		w = &workerConn{state: api.WorkerConnecting, registeredAt: now, beat: make(chan struct{})}
		d.workers[info.Name] = w
		d.roster.pace(len(d.workers))
		d.log.Info("worker registered", "worker", info.Name, "threads", info.MaxThreads, "ops", len(info.Ops),
			"endpoints", endpoints(info.Endpoints), "version", info.Version)
	}
	moved := !slices.EqualFunc(w.info.Endpoints, info.Endpoints, sameEndpoint) || !slices.Equal(w.info.Ops, info.Ops) || !slices.Equal(w.info.Runtimes, info.Runtimes)
	restarted := w.otherProcess(info.Epoch)
	rehold := w.assoc != nil && !moved && !restarted && info.HoldBytes != w.info.HoldBytes
	d.addrs.moved(w.info, info)
	w.info = info
	if w.live == nil || w.live.epoch != info.Epoch { // heartbeats name the new epoch from now on
		w.live = &liveness{epoch: info.Epoch}
		d.roster.put(info.Name, w.live)
	}
	if rehold { // its memory changed: the scheduler holds it to the new figure
		d.step(scheduler.WorkerHold{Worker: info.Name, HoldBytes: info.HoldBytes})
	}
	w.seen(now)
	w.live.slow.Store(false) // a claim waiting on it was woken by seen
	d.roster.tell(w.live)
	if w.state == api.WorkerDown {
		w.state = api.WorkerConnecting
	}
	switch {
	case restarted && w.assoc != nil:
		d.workerDown(w, errors.New("worker restarted"))
	case moved && w.assoc != nil:
		d.workerDown(w, errors.New("worker re-registered with new endpoints or operations"))
	case restarted || moved:
		d.abandonDial(w)
	}
	d.ensureAssoc(w)
	if w.view == nil {
		d.list(w)
	}
	d.touch(w)
}

// abandonDial forgets a dial to a worker's old process or endpoints, still
// pending or waiting to be retried, so that ensureAssoc dials the new ones
// at once: the old dial's result carries a stale generation and is
// dropped (dialed).
func (d *dispatcher) abandonDial(w *workerConn) {
	if w.retry != nil {
		w.retry.Stop()
	}
	d.nextGen++
	w.gen, w.dialing = d.nextGen, false
}

// heartbeat marks a worker alive. It reports false for unknown workers,
// and a *supersededError when epoch (if not 0) is not the registered
// process's: another process has taken the name.
func (d *dispatcher) heartbeat(name string, epoch uint64) (bool, error) {
	w := d.workers[name]
	if w == nil {
		return false, nil
	}
	if w.otherProcess(epoch) {
		d.log.Warn("heartbeat refused: another worker process holds the name now", "worker", name,
			"epoch", epoch, "holder_epoch", w.info.Epoch)
		return true, &supersededError{name: name, holder: w.info}
	}
	w.seen(time.Now())
	if w.state == api.WorkerDown {
		d.log.Info("worker heartbeats again", "worker", name)
		w.state = api.WorkerConnecting
		d.ensureAssoc(w)
		d.touch(w)
	}
	w.live.slow.Store(false) // its next heartbeats need not come here
	d.roster.tell(w.live)
	return true, nil
}

// supersededError refuses a heartbeat or deregistration from a process
// whose name another process has taken.
type supersededError struct {
	name   string
	holder api.WorkerInfo
}

func (e *supersededError) Error() string {
	return fmt.Sprintf("name %s now belongs to another worker process, at %s, which registered while this one was silent; this process no longer holds it",
		e.name, endpoints(e.holder.Endpoints))
}

func (e *supersededError) Unwrap() error { return errConflict }

// deregister removes a worker. The worker itself names its epoch, and
// removes only its own registration. Without an epoch (an operator's
// `braid workers rm`), only a worker that is down is removed: a live one
// would register again at its next heartbeat; stop it instead. It reports
// false for unknown workers.
func (d *dispatcher) deregister(name string, epoch uint64) (bool, error) {
	w := d.workers[name]
	switch {
	case w == nil:
		return false, nil
	case w.otherProcess(epoch):
		return true, &supersededError{name: name, holder: w.info}
	case epoch == 0 && w.state != api.WorkerDown:
		return true, &apiError{status: 409, code: api.CodeConflict, msg: fmt.Sprintf(
			"worker %s is %s (last heartbeat %v ago): stop the worker instead, which deregisters it; "+
				"a live worker removed would register again at its next heartbeat", name, w.state,
			time.Since(w.live.lastSeen()).Round(time.Millisecond))}
	}
	d.forget(w, errDeregistered)
	by := "worker"
	if epoch == 0 {
		by = "operator"
	}
	d.log.Info("worker deregistered", "worker", name, "by", by)
	return true, nil
}

// errDeregistered ends the association of a worker removed from the list:
// it deregistered (a clean stop) or was forgotten.
var errDeregistered = errors.New("worker deregistered")

// forget removes a worker, giving its units back to the queue.
func (d *dispatcher) forget(w *workerConn, reason error) {
	d.workerDown(w, reason)
	w.close(reason)
	delete(d.workers, w.info.Name)
	d.addrs.release(w.info)
	d.unlist(w)
	d.roster.remove(w.info.Name, w.live)
	d.roster.pace(len(d.workers))
}

// forgetIfDownLong forgets w, which is down, if it has been for longer
// than Config.ForgetWorkersAfter.
func (d *dispatcher) forgetIfDownLong(w *workerConn, now time.Time) {
	after := d.s.cfg.ForgetWorkersAfter
	if silent := now.Sub(w.live.lastSeen()); after >= 0 && silent > after {
		d.forget(w, errDeregistered)
		d.log.Info("worker forgotten: down too long", "worker", w.info.Name,
			"silent_for", silent.Round(time.Second), "forget_after", after)
	}
}

// pickEndpoint chooses the first of the worker's endpoints whose transport
// this server has.
func (d *dispatcher) pickEndpoint(info api.WorkerInfo) (api.Endpoint, transport.Transport, error) {
	for _, ep := range info.Endpoints {
		if t, ok := d.s.cfg.Transports[ep.Transport]; ok {
			return ep, t, nil
		}
	}
	return api.Endpoint{}, nil, fmt.Errorf("no transport in common (worker offers %v)", info.Endpoints)
}

// ensureAssoc starts dialing the worker unless connected or dialing.
func (d *dispatcher) ensureAssoc(w *workerConn) {
	if w.assoc != nil || w.dialing || w.state == api.WorkerDown {
		return
	}
	ep, t, err := d.pickEndpoint(w.info)
	if err == nil {
		if other := d.addrs.takenBy(w.info.Name, ep); other != "" {
			err = fmt.Errorf("worker %s registered its address (%s %s) since: not dialed; down at its heartbeat timeout unless it registers again",
				other, ep.Transport, ep.Addr)
		}
	}
	if err != nil {
		w.errText = err.Error()
		d.touch(w)
		return
	}
	d.nextGen++
	w.dialing, w.gen = true, d.nextGen
	name, gen := w.info.Name, w.gen
	cfg := transport.DialConfig{Secret: d.s.cfg.Secret, Name: d.s.cfg.Name, ID: d.s.ID(), Epoch: d.s.Epoch(), Liveness: d.s.cfg.Liveness,
		RecStreams: max(w.info.MaxThreads, 1), MaxStreams: transport.MaxStreams, Routes: ep.Routes,
		Logf: func(format string, args ...any) {
			d.log.Warn("association to worker: "+fmt.Sprintf(format, args...), "worker", name)
		}}
	d.s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(d.s.ctx, 10*time.Second)
		defer cancel()
		a, err := t.Dial(ctx, ep.Addr, cfg)
		ran := make(chan struct{})
		posted := d.post(func() {
			d.dialed(name, gen, ep.Transport, a, err)
			close(ran)
		})
		if a == nil {
			return
		}
		if !posted {
			a.Abort(ErrServerClosed)
			return
		}
		select {
		case <-ran:
		case <-d.exited: // the loop ended without taking it
			a.Abort(ErrServerClosed)
		}
	})
}

func (d *dispatcher) dialed(name string, gen int, tname string, a transport.Association, err error) {
	w := d.workers[name]
	if w == nil || w.gen != gen {
		if a != nil {
			a.Abort(errors.New("server: association no longer wanted"))
		}
		return
	}
	w.dialing = false
	d.touch(w)
	if err != nil {
		w.errText = err.Error()
		d.log.Warn("association to worker failed; retrying", "worker", name, "err", err)
		d.retryLater(w, time.Second)
		return
	}
	if err := w.answers(a); err != nil { // another process at its address: it does not speak for w
		a.Abort(err)
		w.errText = err.Error()
		d.log.Warn("association to worker refused: another process answers at its address; retrying", "worker", name, "err", err)
		d.retryLater(w, time.Second)
		return
	}
	a = d.s.metrics.traffic.Wrap(a, tname) // counts what the senders and readers move
	w.assoc, w.transport, w.state, w.errText = a, tname, api.WorkerUp, ""
	w.live.link(transport.SilenceBounds(a))
	w.lease, w.leaseSeq, w.want = 0, 0, wire.Want{}
	d.startStreams(w, a)
	d.log.Info("association up", "worker", name, "transport", tname, "streams", a.Streams())
	d.step(scheduler.WorkerUp{Worker: name, Streams: a.Streams(), Threads: w.info.MaxThreads, Ops: schedOps(w.info), AwaitLease: true,
		HoldBytes: w.info.HoldBytes})
	d.sendWant(w, true)
}

// answers reports, as an error, whether a, an association dialed to w's
// endpoint, is not with the process that holds w's registration: the
// handshake names the worker and its epoch (transport.PeerInfo). A
// worker restarted on a fixed port answers at its predecessor's address
// before it registers; linked to the old registration, its association
// would keep that up and refuse the new one its name (names.go).
func (w *workerConn) answers(a transport.Association) error {
	p := a.Peer()
	switch {
	case p.Name != transport.HandshakeName(w.info.Name):
		return fmt.Errorf("server: the worker at %s is named %q, not %s", endpoints(w.info.Endpoints), p.Name, w.info.Name)
	case p.Epoch != 0 && w.info.Epoch != 0 && p.Epoch != w.info.Epoch:
		return fmt.Errorf("server: the worker %s at %s is another process (epoch %d) than the one registered (epoch %d)",
			w.info.Name, endpoints(w.info.Endpoints), p.Epoch, w.info.Epoch)
	}
	return nil
}

// sendWant tells the worker how many streams we could keep busy and how
// many units we have in flight there: when forced (the answer to a lease),
// when the demand changed, and, while the worker lends us nothing, when
// the in-flight count changed (so a worker shutting down learns when we
// have every answer). A full stream-0 queue defers it to the next tick.
func (d *dispatcher) sendWant(w *workerConn, force bool) {
	if w.assoc == nil {
		return
	}
	want := wire.Want{Streams: d.core.Demand(w.info.Name), InFlight: d.core.InFlight(w.info.Name), LeaseSeq: w.leaseSeq}
	if d.draining { // stopping: ask only for the threads to finish what is out
		want.Streams = min(want.InFlight, w.assoc.Streams())
	}
	if !force && want.Streams == w.want.Streams && (w.lease > 0 || want.InFlight == w.want.InFlight) {
		return
	}
	select { // a want is state: the latest replaces one not yet sent
	case old := <-w.wantQ:
		putBuf(old)
	default:
	}
	w.wantQ <- wire.AppendWant(getBuf(16), want) // only the loop sends, and it just made room
	w.want = want
}

// sendWants updates every worker's demand.
func (d *dispatcher) sendWants() {
	for _, w := range d.workers {
		d.sendWant(w, false)
	}
}

// onLease applies the worker's new lease.
func (d *dispatcher) onLease(w *workerConn, l wire.Lease) {
	n := l.Streams
	if n > w.assoc.Streams() {
		w.assoc.Abort(fmt.Errorf("server: %w: worker lent %d of %d streams", transport.ErrProtocol, n, w.assoc.Streams()))
		return
	}
	if n != w.lease {
		d.log.Debug("lease", "worker", w.info.Name, "streams", n)
	}
	w.lease, w.leaseSeq = n, l.Seq
	d.touch(w)
	if d.draining {
		n = 0 // stopping: place nothing more (drain.go)
	}
	d.step(scheduler.WorkerLease{Worker: w.info.Name, Streams: n})
	d.sendWant(w, true)
}

// startStreams starts a sender and a reader per stream, and a watcher that
// reports the association's end to the loop.
func (d *dispatcher) startStreams(w *workerConn, a transport.Association) {
	name, gen := w.info.Name, w.gen
	w.queues = make([]chan []byte, a.Streams())
	w.wantQ = make(chan []byte, 1)
	for s := range w.queues {
		q := make(chan []byte, d.s.streamQueueLen())
		w.queues[s] = q
		var wants chan []byte // stream 0 also carries the wants
		if s == 0 {
			wants = w.wantQ
		}
		d.s.wg.Go(func() { d.sender(a, s, q, wants) })
		d.s.wg.Go(func() { d.reader(a, name, gen, s) })
	}
	d.s.wg.Go(func() {
		<-a.Done()
		d.post(func() {
			if w := d.workers[name]; w != nil && w.gen == gen {
				d.workerDown(w, a.Err())
			}
		})
	})
}

// workerDown forgets the association and gives its units back to the core.
func (d *dispatcher) workerDown(w *workerConn, reason error) {
	if w.assoc == nil {
		return
	}
	if d.roster.linked(w.live) { // the association was its sign of life: the last one is its last word there
		w.live.heardBy(lastHeard(reason, time.Now()))
	}
	w.live.link(0, 0)
	w.assoc.Abort(reason)
	for _, q := range w.queues {
		close(q)
	}
	w.assoc, w.queues = nil, nil
	d.touch(w)
	d.nextGen++
	w.state, w.gen = api.WorkerConnecting, d.nextGen
	if reason != nil {
		w.errText = reason.Error()
	}
	n := len(w.flights)
	for _, id := range w.flights {
		if d.inflight[id].parked {
			d.admit.live--
		}
		delete(d.inflight, id)
	}
	w.flights = nil
	d.s.metrics.requeuedDown.Add(float64(n))
	if errors.Is(reason, transport.ErrPeerLost) {
		d.s.metrics.livenessAssoc.Inc()
	}
	if errors.Is(reason, errDeregistered) {
		d.log.Info("association closed", "worker", w.info.Name, "reason", reason, "units_requeued", n)
	} else {
		d.log.Warn("association down", "worker", w.info.Name, "reason", reason, "units_requeued", n)
	}
	d.step(scheduler.WorkerDown{Worker: w.info.Name})
	d.retryLater(w, 500*time.Millisecond)
}

// lastHeard is when an association that ended at now for reason last
// heard from its peer: a silence before it gave up on the peer, else now
// (the peer closed it, or we did, after hearing from it within its
// bounds).
func lastHeard(reason error, now time.Time) time.Time {
	var lost *transport.PeerLostError
	if errors.As(reason, &lost) {
		return now.Add(-lost.Silence)
	}
	return now
}

// retryLater dials w again after delay, unless a later retry replaces this
// one.
func (d *dispatcher) retryLater(w *workerConn, delay time.Duration) {
	if w.retry != nil {
		w.retry.Stop()
	}
	w.retry = time.AfterFunc(delay, func() { d.post(func() { d.ensureAssoc(w) }) })
}

// sender writes queued units (and, on stream 0, wants) on one stream until
// the queue is closed. What is queued when it wakes goes out as one batch
// (transport.SendBatch: one write on the TCP transports), so that units
// placed on a worker together cost one system call, not one each.
func (d *dispatcher) sender(a transport.Association, s int, q, wants chan []byte) {
	var batch [][]byte
	for {
		var ok bool
		if batch, ok = takeBatch(batch[:0], q, wants); !ok {
			putBufs(batch)
			return
		}
		err := transport.SendBatch(d.s.ctx, a, s, batch)
		putBufs(batch)
		d.s.metrics.sendBatches.Inc()
		if err != nil {
			a.Abort(err)
			for msg := range q { // drain until the loop closes q
				putBuf(msg)
			}
			return
		}
	}
}

// maxSendBatch bounds the messages a sender takes from its queues at once.
const maxSendBatch = 64

// takeBatch waits for a message from q or wants and appends it, and then
// every message queued behind it (up to maxSendBatch), to batch; ok is
// false once q is closed.
func takeBatch(batch [][]byte, q, wants chan []byte) (_ [][]byte, ok bool) {
	select {
	case m, ok := <-q:
		if !ok {
			return batch, false
		}
		batch = append(batch, m)
	case m := <-wants:
		batch = append(batch, m)
	}
	for len(batch) < maxSendBatch {
		select {
		case m, ok := <-q:
			if !ok {
				return batch, false
			}
			batch = append(batch, m)
		case m := <-wants:
			batch = append(batch, m)
		default:
			return batch, true
		}
	}
	return batch, true
}

// putBufs gives every message of batch back to the pool.
func putBufs(batch [][]byte) {
	for i, m := range batch {
		putBuf(m)
		batch[i] = nil
	}
}

// reader reads results from one stream, stores their outputs, and hands
// them to the loop; stream 0 also carries the worker's leases, which go to
// the loop by the same channel so that a lease and the units handed back
// after it are seen in order.
func (d *dispatcher) reader(a transport.Association, worker string, gen, s int) {
	for {
		msg, err := a.Recv(d.s.ctx, s)
		if err != nil {
			return
		}
		r := resultMsg{worker: worker, gen: gen, stream: s, returned: time.Now(), kind: wire.KindOf(msg)}
		switch {
		case r.kind == wire.KindLease && s == 0:
			r.lease, err = wire.ParseLease(msg)
		case r.kind == wire.KindResult:
			r.res, err = wire.ParseResult(msg)
		default:
			err = fmt.Errorf("%w: %s message on stream %d", wire.ErrMalformed, r.kind, s)
		}
		if err != nil {
			d.log.Warn("bad message from worker; closing association", "worker", worker, "err", err)
			a.Abort(err)
			return
		}
		if r.res.Status == wire.StatusOK {
			info, err := d.s.store.PutBytes(d.s.ctx, r.res.Output)
			if err != nil {
				r.res.Status, r.res.Error = wire.StatusFailed, "server could not store the output: "+err.Error()
			}
			r.output, r.size = info.ID, info.Size
		}
		r.res.Output = nil
		select {
		case d.results <- r:
		case <-d.s.stopped:
			return
		}
	}
}

// sameEndpoint reports whether a and b are the same endpoint, routes
// included.
func sameEndpoint(a, b api.Endpoint) bool {
	return a.Transport == b.Transport && a.Addr == b.Addr && slices.Equal(a.Routes, b.Routes)
}

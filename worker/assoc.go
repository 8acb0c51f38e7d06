package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/wire"
)

// task is a received unit waiting for a thread.
type task struct {
	unit   wire.Unit
	stream int
	queued time.Time
	// release ends the unit's hold on the association (transport.Busy)
	// once its result or its hand-back is sent.
	release func()
}

// session is one association's state: its queue, its loan of threads and
// the goroutines that serve it.
//
// Per stream a reader moves units into the queue; per stream a compute
// goroutine k runs units while k is below the association's lease, each
// unit holding one of the worker's threads; one control sender writes the
// lease messages and the units handed back, in that order, on stream 0.
// While the lease is 0 (the worker lends this server nothing: it is
// stopping, or busier servers have every thread, even after a unit's
// arrival asked for one) units are handed back instead of queued, so that
// the server places them elsewhere.
type session struct {
	w       *Worker
	a       transport.Association
	loan    *loan
	queue   chan task
	returns chan task     // units to hand back unrun, in order
	sweep   chan struct{} // cap 1: tells control to hand back the queue
	// busy counts the units taken off the queue (or set to be handed back)
	// whose answer is not yet sent.
	busy atomic.Int64
	// seqMu guards sentSeq, the sequence number of the last lease sent,
	// and owed, the server's count of units in flight here from its latest
	// want that answers that lease (-1 until one does). A stop waits for
	// owed to be 0.
	seqMu   sync.Mutex
	sentSeq uint32
	owed    int
	// ewmaNS is an EWMA of compute time in nanoseconds, for the feedback
	// each result carries.
	ewmaNS atomic.Int64
	canRun map[string]bool
	// busier is the association unwrapped: each unit holds it busy while
	// it is here, so that the server notices our loss within the liveness
	// bound, not the idle bound (transport.Busy).
	busier transport.Association
}

// serveAssoc runs one association until it ends or ctx does (then it is
// closed gracefully: results already being sent are delivered).
func (w *Worker) serveAssoc(ctx context.Context, a transport.Association) {
	raw := a
	a = w.metrics.traffic.Wrap(a, w.cfg.Transport.Name())
	n := a.Streams()
	s := &session{w: w, a: a, loan: w.lender.add(n), queue: make(chan task, 4*n),
		returns: make(chan task, 4*n), sweep: make(chan struct{}, 1), owed: -1, canRun: map[string]bool{}}
	s.busier = raw
	w.track(s, true)
	defer w.track(s, false)
	for _, op := range w.cfg.Ops {
		s.canRun[op] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { s.control(ctx) })
	for i := range n {
		wg.Go(func() { s.read(ctx, i) })
		wg.Go(func() { s.compute(ctx, i) })
	}
	stopping := false
	select {
	case <-a.Done():
	case <-ctx.Done():
		a.Close()
		stopping = true
	}
	w.lender.remove(s.loan) // its threads go to the others now, not when its last unit ends
	cancel()
	wg.Wait()
	w.logEnd(a, stopping)
}

// logEnd says how an association ended: at info level when this worker or
// the server closed it, as a warning when it failed.
func (w *Worker) logEnd(a transport.Association, stopping bool) {
	err := a.Err()
	if errors.Is(err, transport.ErrPeerLost) {
		w.metrics.liveness.Inc()
	}
	switch {
	case stopping || err == nil || errors.Is(err, transport.ErrClosed) || errors.Is(err, net.ErrClosed):
		w.log.Info("association closed", "server", a.Peer().Name)
	case errors.Is(err, errSuperseded), errors.Is(err, transport.ErrPeerClosed):
		w.log.Info("association closed", "server", a.Peer().Name, "reason", err)
	default:
		w.log.Warn("association ended", "server", a.Peer().Name, "err", err)
	}
}

// read moves units from one stream into the queue (or hands them back);
// stream 0 also carries the server's wants. A message that is neither
// aborts the association.
func (s *session) read(ctx context.Context, stream int) {
	for {
		msg, err := s.a.Recv(ctx, stream)
		if err != nil {
			return
		}
		if err := s.take(ctx, stream, msg); err != nil {
			s.w.log.Warn("server broke the protocol; aborting the association", "server", s.a.Peer().Name, "err", err)
			s.a.Abort(fmt.Errorf("worker: %w", err))
			return
		}
	}
}

func (s *session) take(ctx context.Context, stream int, msg []byte) error {
	switch k := wire.KindOf(msg); {
	case k == wire.KindWant && stream == 0:
		want, err := wire.ParseWant(msg)
		if err == nil {
			s.onWant(want)
		}
		return err
	case k != wire.KindUnit:
		return fmt.Errorf("%w: %s message on stream %d", wire.ErrMalformed, k, stream)
	}
	u, err := wire.ParseUnit(msg)
	if err != nil {
		return err
	}
	t := task{unit: u, stream: stream, queued: time.Now(), release: transport.Busy(s.busier)}
	if s.w.debug {
		s.w.log.Debug("unit received", "server", s.a.Peer().Name, "job", u.Job, "unit", u.Index, "attempt", u.Attempt,
			"op", u.Op, "stream", stream, "bytes", len(u.Input))
	}
	if s.w.lender.arrived(s.loan, stream) == 0 {
		s.giveBack(ctx, t)
		return nil
	}
	select {
	case s.queue <- t:
	case <-ctx.Done():
		return nil
	}
	if s.lentNothing() { // the lease fell to 0 meanwhile
		s.poke()
	}
	return nil
}

// onWant applies a want: the lender hears what the server asks for, and a
// want that answers the last lease sent says what the server has in flight.
func (s *session) onWant(want wire.Want) {
	s.seqMu.Lock()
	if want.LeaseSeq == s.sentSeq && want.LeaseSeq != 0 {
		s.owed = want.InFlight
	}
	s.seqMu.Unlock()
	s.w.lender.ask(s.loan, want.Streams)
}

// owes reports whether the server may still have units in flight here, as
// far as its answers to the last lease say.
func (s *session) owes() bool {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	return s.owed != 0
}

// lentNothing reports whether the association's lease is 0.
func (s *session) lentNothing() bool {
	n, _ := s.w.lender.current(s.loan)
	return n == 0
}

// poke asks control to hand back the queue.
func (s *session) poke() {
	select {
	case s.sweep <- struct{}{}:
	default:
	}
}

// giveBack queues t to be handed back; it counts as busy until it is.
func (s *session) giveBack(ctx context.Context, t task) {
	s.busy.Add(1)
	select {
	case s.returns <- t:
	case <-ctx.Done():
		s.busy.Add(-1)
	}
}

// compute is thread slot k of the association: it runs units while k is
// below the lease, each on one of the worker's threads.
func (s *session) compute(ctx context.Context, k int) {
	var buf []byte
	for {
		lease, changed := s.w.lender.current(s.loan)
		if k >= lease {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		var t task
		select {
		case t = <-s.queue:
		case <-changed:
			continue
		case <-ctx.Done():
			return
		}
		s.busy.Add(1) // until its result is sent: a stop waits for it
		if !s.runAndSend(ctx, t, &buf) {
			return
		}
	}
}

// runAndSend runs t on one of the worker's threads and sends its result,
// or hands t back if the lease fell to 0 meanwhile. It reports whether the
// association can go on.
func (s *session) runAndSend(ctx context.Context, t task, buf *[]byte) bool {
	defer s.busy.Add(-1)
	if s.lentNothing() {
		s.giveBack(ctx, t)
		return ctx.Err() == nil
	}
	defer t.release()
	res, ok := s.runOnThread(ctx, t)
	if !ok {
		return false
	}
	*buf = wire.AppendResult((*buf)[:0], &res)
	err := s.a.Send(ctx, t.stream, *buf)
	if cap(*buf) > 1<<20 {
		*buf = nil
	}
	return err == nil
}

// runOnThread waits for one of the worker's threads and runs t on it.
func (s *session) runOnThread(ctx context.Context, t task) (wire.Result, bool) {
	select {
	case s.w.threads <- struct{}{}:
	case <-ctx.Done():
		return wire.Result{}, false
	}
	defer func() { <-s.w.threads }()
	return s.run(ctx, t), true
}

// control sends the lease whenever it changes and hands back units: those
// given back, and, while the lease is 0, whatever is queued. A hand-back
// goes after the lease that took the streams back, on the same stream, so
// the server never sends the unit here again.
func (s *session) control(ctx context.Context) {
	sent := -1 // the first pass tells the server its first lease
	var back []task
	for {
		n, again := s.w.lender.toSend(s.loan)
		if n != sent || again {
			if !s.sendLease(ctx, n) {
				return
			}
			sent = n
		}
		if n == 0 && s.lentNothing() { // a unit's arrival may have lent threads again
			back = append(back, s.unstarted()...)
		}
		for len(back) > 0 {
			ok := s.handBack(ctx, back[0])
			back[0].release()
			s.busy.Add(-1)
			back = back[1:]
			if !ok {
				return
			}
		}
		select {
		case <-s.loan.kick:
		case <-s.sweep:
		case t := <-s.returns:
			back = append(back, t)
		case <-ctx.Done():
			return
		}
	}
}

// sendLease tells the server its new lease. The server's wants count as
// the answer to it (owed) only once they name it.
func (s *session) sendLease(ctx context.Context, n int) bool {
	s.seqMu.Lock()
	s.sentSeq++
	seq := s.sentSeq
	s.owed = -1
	s.seqMu.Unlock()
	return s.a.Send(ctx, 0, wire.AppendLease(nil, wire.Lease{Streams: n, Seq: seq})) == nil
}

// unstarted empties the queue; what it returns counts as busy until it is
// handed back.
func (s *session) unstarted() []task {
	var out []task
	for {
		select {
		case t := <-s.queue:
			s.busy.Add(1)
			out = append(out, t)
		default:
			return out
		}
	}
}

// handBack tells the server that t was not run.
func (s *session) handBack(ctx context.Context, t task) bool {
	res := wire.Result{ID: t.unit.ID, Status: wire.StatusReturned, Error: "worker " + s.w.cfg.Name + " is shutting down"}
	s.w.metrics.handedBack.Inc()
	if s.w.debug {
		s.w.log.Debug("unit handed back", "server", s.a.Peer().Name, "job", t.unit.Job, "unit", t.unit.Index, "attempt", t.unit.Attempt)
	}
	return s.a.Send(ctx, 0, wire.AppendResult(nil, &res)) == nil
}

// run executes one unit and fills in its result and the feedback.
func (s *session) run(ctx context.Context, t task) wire.Result {
	res := wire.Result{ID: t.unit.ID}
	start := time.Now()
	res.Queued = start.Sub(t.queued)
	if reason := s.refusal(t.unit); reason != "" {
		res.Status, res.Error = wire.StatusRefused, reason
		s.w.log.Warn("unit refused", "server", s.a.Peer().Name, "job", t.unit.Job, "unit", t.unit.Index, "op", t.unit.Op, "reason", res.Error)
		s.w.metrics.observe(true, false, res.Queued, 0)
		return res
	}
	out, err := s.runOp(ctx, t.unit)
	res.Compute = time.Since(start)
	if err != nil {
		res.Status, res.Error = wire.StatusFailed, err.Error()
		s.w.log.Warn("unit failed", "server", s.a.Peer().Name, "job", t.unit.Job, "unit", t.unit.Index, "attempt", t.unit.Attempt,
			"op", t.unit.Op, "reason", res.Error)
	} else {
		res.Output = out
		if s.w.debug {
			s.w.log.Debug("unit done", "server", s.a.Peer().Name, "job", t.unit.Job, "unit", t.unit.Index, "attempt", t.unit.Attempt,
				"op", t.unit.Op, "compute", res.Compute, "queued", res.Queued)
		}
	}
	s.observe(res.Compute)
	s.w.metrics.observe(false, err != nil, res.Queued, res.Compute)
	res.QueueDepth = len(s.queue)
	if e := s.ewmaNS.Load(); e > 0 {
		lease, _ := s.w.lender.current(s.loan)
		res.Rate = float64(max(lease, 1)) * float64(time.Second) / float64(e)
	}
	return res
}

// refusal says why the worker cannot run u at all, or "".
func (s *session) refusal(u wire.Unit) string {
	if isPipeline(u.Op) {
		return s.pipelineRefusal(u)
	}
	if u.Digest != [32]byte{} {
		return s.userRefusal(u.Params)
	}
	if !s.canRun[u.Op] {
		return fmt.Sprintf("worker %s does not run operation %q", s.w.cfg.Name, u.Op)
	}
	return ""
}

// userRefusal says why the worker cannot run a user operation whose unit
// (or pipeline step) has params, or "".
func (s *session) userRefusal(params map[string]string) string {
	if params["braid.abi"] == api.ABIExec {
		if interp := params["braid.interpreter"]; !s.w.allowsExec(interp) {
			return fmt.Sprintf("worker %s does not allow %s scripts (braid worker --allow-exec)", s.w.cfg.Name, interp)
		}
		if params["braid.network"] == "true" && !s.w.cfg.ExecNetwork {
			return fmt.Sprintf("worker %s gives scripts no network (braid worker --exec-network)", s.w.cfg.Name)
		}
		return ""
	}
	if s.w.cfg.NoWasm {
		return fmt.Sprintf("worker %s does not run WebAssembly operations (it was started with --no-wasm)", s.w.cfg.Name)
	}
	return ""
}

// runOp runs a unit's operation: a pipeline's steps in turn, a user
// operation (its unit names the module's digest) in the sandbox, a
// built-in one here.
func (s *session) runOp(ctx context.Context, u wire.Unit) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("operation %s panicked: %v", u.Op, r)
		}
	}()
	if isPipeline(u.Op) {
		return s.runPipeline(ctx, u)
	}
	if u.Digest != [32]byte{} {
		inv, err := userop.ParseInvocation(u.Params)
		if err != nil {
			return nil, err
		}
		return s.w.wasm.Run(ctx, u.Op, u.Digest, inv, u.Input)
	}
	return runBuiltin(u.Op, u.Params, u.Input)
}

// runBuiltin runs a built-in operation, turning a panic in it into an
// error so that one hostile input cannot take the worker down.
func runBuiltin(op string, params map[string]string, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("operation %s panicked: %v", op, r)
		}
	}()
	return ops.Run(op, ops.Params(params), input)
}

// observe folds a compute time into the EWMA (weight 1/8).
func (s *session) observe(d time.Duration) {
	ns := max(int64(d), 1)
	for {
		old := s.ewmaNS.Load()
		next := ns
		if old > 0 {
			next = old + (ns-old)/8
		}
		if next > math.MaxInt64/2 || s.ewmaNS.CompareAndSwap(old, next) {
			return
		}
	}
}

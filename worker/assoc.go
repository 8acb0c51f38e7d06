package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/wire"
)

// task is a received unit waiting for a thread.
type task struct {
	unit   wire.Unit
	stream int
	queued time.Time
}

// session is one association's state: its queue and sub-pool.
type session struct {
	w     *Worker
	a     transport.Association
	queue chan task
	// rate is an EWMA of compute time in nanoseconds, for the feedback
	// each result carries.
	ewmaNS atomic.Int64
	canRun map[string]bool
}

// serveAssoc runs one association: one reader per stream moves units into
// the queue, and one thread per stream (the sub-pool) runs them.
func (w *Worker) serveAssoc(ctx context.Context, a transport.Association) {
	n := a.Streams()
	s := &session{w: w, a: a, queue: make(chan task, 2*n), canRun: map[string]bool{}}
	for _, op := range w.cfg.Ops {
		s.canRun[op] = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { s.read(ctx, i) })
		wg.Go(func() { s.compute(ctx) })
	}
	select {
	case <-a.Done():
	case <-ctx.Done():
		a.Close()
	}
	cancel()
	wg.Wait()
	if err := a.Err(); err != nil && !errors.Is(err, transport.ErrPeerClosed) && !errors.Is(err, transport.ErrClosed) {
		w.log.Warn("association ended", "server", a.Peer().Name, "err", err)
	} else {
		w.log.Info("association closed", "server", a.Peer().Name)
	}
}

// read moves units from one stream into the queue; a message that is not a
// unit aborts the association.
func (s *session) read(ctx context.Context, stream int) {
	for {
		msg, err := s.a.Recv(ctx, stream)
		if err != nil {
			return
		}
		u, err := wire.ParseUnit(msg)
		if err != nil {
			s.w.log.Warn("server sent a malformed unit; aborting the association", "server", s.a.Peer().Name, "err", err)
			s.a.Abort(fmt.Errorf("worker: %w", err))
			return
		}
		select {
		case s.queue <- task{unit: u, stream: stream, queued: time.Now()}:
		case <-ctx.Done():
			return
		}
	}
}

// compute is one thread of the sub-pool.
func (s *session) compute(ctx context.Context) {
	var buf []byte
	for {
		var t task
		select {
		case t = <-s.queue:
		case <-ctx.Done():
			return
		}
		res := s.run(t)
		buf = wire.AppendResult(buf[:0], &res)
		if err := s.a.Send(ctx, t.stream, buf); err != nil {
			return
		}
		if cap(buf) > 1<<20 {
			buf = nil
		}
	}
}

// run executes one unit and fills in its result and the feedback.
func (s *session) run(t task) wire.Result {
	res := wire.Result{ID: t.unit.ID}
	start := time.Now()
	res.Queued = start.Sub(t.queued)
	if !s.canRun[t.unit.Op] {
		res.Status, res.Error = wire.StatusRefused, fmt.Sprintf("worker %s does not run operation %q", s.w.cfg.Name, t.unit.Op)
		return res
	}
	out, err := runOp(t.unit)
	res.Compute = time.Since(start)
	if err != nil {
		res.Status, res.Error = wire.StatusFailed, err.Error()
	} else {
		res.Output = out
	}
	s.observe(res.Compute)
	res.QueueDepth = len(s.queue)
	if e := s.ewmaNS.Load(); e > 0 {
		res.Rate = float64(s.a.Streams()) * float64(time.Second) / float64(e)
	}
	return res
}

// runOp runs an operation, turning a panic in it into an error so that one
// hostile input cannot take the worker down.
func runOp(u wire.Unit) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("operation %s panicked: %v", u.Op, r)
		}
	}()
	return ops.Run(u.Op, ops.Params(u.Params), u.Input)
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

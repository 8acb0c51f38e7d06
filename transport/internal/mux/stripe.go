package mux

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// Striping ("ptcp", after psockets). A striped association's links are not
// tied to streams: every message is cut into blocks of Config.BlockSize,
// each a Block frame numbered in its stream, and a driver spreads the blocks
// over the links:
//
//   - RoundRobin hands block after block to link after link, whatever each
//     link's speed, so the slowest link sets the pace (the psock "rr").
//   - PollAll hands each block to whichever link's writer is free first (a
//     writer is busy while the kernel has no room for its block), so a fast
//     link carries more (the psock "pollall").
//
// A side spreads its blocks over the first Config.SendStripes links, or as
// many as its stripe tuner says (stripetune.go); the receiver takes blocks
// from every link.
//
// Each link has a writer goroutine that takes blocks from its queue (one
// queue per link for RoundRobin, one shared by all for PollAll, unbuffered
// either way: a block is handed over only to a writer ready to write it,
// and a writer stays busy while the kernel has no room for its block).
// Blocks carry a copy of their part of the message, and Send returns once
// every block is handed over, like a write into a socket buffer; Close
// waits for the writers to write them. A Send cancelled after it handed
// over a block aborts the association, as the blocks around the missing
// one cannot be put together.
//
// The receiver puts a stream's blocks back in order: a block that arrives
// ahead of its turn is held until the blocks before it have come through
// the other links. Held blocks are bounded by Config.PartialBytes for the
// association, each counted as its bytes plus 256 for its bookkeeping (so
// that a peer cannot park millions of empty ones); a link reader with a
// block to hold beyond the bound waits until blocks already held are
// delivered, which the other links' readers do. Messages being put
// together are bounded as on a shared link, with the sender reserving a
// message's length before its first block when it takes more than one
// (budget.go).
// A stream's messages go into its queue in order; while the application
// leaves a queue full, the reader delivering to it waits, and so does every
// other link whose blocks that stream needs next: striped streams are not
// independent.

// Driver picks a link for each block of a striped association.
type Driver int

// Drivers.
const (
	RoundRobin Driver = iota
	PollAll
)

func (d Driver) String() string {
	if d == PollAll {
		return "pollall"
	}
	return "rr"
}

// maxAhead bounds how far ahead of a stream's next block a block may be
// numbered: farther is a protocol violation.
const maxAhead = 1 << 24

// heldCost is what a held block of n bytes costs the held budget: its
// bytes and its bookkeeping, so that empty blocks are not free.
func heldCost(n uint32) uint32 { return n + 256 }

// block is one Block frame on its way to a link's writer.
type block struct {
	h   frame.Header
	buf *[]byte // the payload, a copy, from blockPool
}

// reorder is one stream's receive state on a striped association.
type reorder struct {
	mu      sync.Mutex
	next    uint32               // the sequence number of the block due next
	held    map[uint32]heldBlock // blocks that arrived ahead of their turn
	msg     []byte               // the message being put together
	msgLen  uint32               // its announced length
	started bool                 // a message is under way
	budget  bool                 // its length is reserved in recvBudget
	// moved, if not nil, is closed when next moves: a reader waiting for
	// room to hold a block stops waiting when the block comes due.
	moved chan struct{}
}

type heldBlock struct {
	h       frame.Header
	payload []byte
}

// startStriping sets up the queues and starts a writer per link, and the
// stripe tuner if asked for.
func (a *Assoc) startStriping() {
	if a.cfg.BlockSize <= 0 || a.cfg.BlockSize > frame.MaxPayload {
		a.cfg.BlockSize = frame.MaxPayload
	}
	a.sendSeq = make([]uint32, a.cfg.Streams)
	a.heldBudget = newRecvBudget(a.cfg.PartialBytes, true, a.stop)
	for range a.cfg.Streams {
		a.reorders = append(a.reorders, &reorder{held: map[uint32]heldBlock{}})
	}
	n := a.cfg.SendStripes
	if n <= 0 || n > len(a.links) {
		n = len(a.links)
	}
	a.sending.Store(int32(n))
	wake := make(chan struct{})
	a.wake.Store(&wake)
	shared := make(chan *block)
	for i, l := range a.links {
		l.blocks = shared
		if a.cfg.Driver == RoundRobin {
			l.blocks = make(chan *block)
		}
		go a.writeBlocks(i, l)
	}
	if a.cfg.TuneStripes && a.cfg.Probe != nil && len(a.links) > 1 {
		go a.tuneStripes()
	}
}

// SendingStripes is how many links this side sends blocks on now (all of
// a striped association's links but the tuner's or SendStripes' choice;
// 1 unstriped).
func (a *Assoc) SendingStripes() int {
	if !a.cfg.Striped {
		return 1
	}
	return int(a.sending.Load())
}

// setSending makes blocks go out on the first n links: the count is
// stored before the writers' wake channel is swapped and closed, so a
// writer that took the old channel is woken and one that takes the new
// one sees the new count.
func (a *Assoc) setSending(n int) {
	a.sending.Store(int32(n))
	wake := make(chan struct{})
	close(*a.wake.Swap(&wake))
}

// writeBlocks is link i's writer on a striped association: it writes the
// blocks handed to it until the association stops. A block handed over is
// always written, or the association fails (writeFrame). While the link is
// not among those sending, it takes none (pollall), or is handed none
// (round-robin).
func (a *Assoc) writeBlocks(i int, l *link) {
	for {
		wake := *a.wake.Load() // before the count: a change after closes it
		blocks := l.blocks
		// Round-robin keeps taking: a dispatch may have picked l just as
		// the count fell below it.
		if a.cfg.Driver == PollAll && i >= int(a.sending.Load()) {
			blocks = nil
		}
		select {
		case b := <-blocks:
			_ = a.writeFrame(context.Background(), l, b.h, *b.buf, true)
			b.free()
			a.blocksOut.Add(-1)
		case <-wake:
		case <-a.stop:
			return
		}
	}
}

// sendStriped sends p on stream s as blocks; the caller holds the stream's
// send semaphore, which guards sendSeq[s]. It returns once every block is
// handed to a writer: each carries a copy of its part of p, so that a
// writer busy on a slow link keeps its block while the next ones go to the
// others (pollall), and the caller may reuse p.
func (a *Assoc) sendStriped(ctx context.Context, s int, p []byte) error {
	for off, handed := 0, 0; ; handed++ {
		m := min(len(p)-off, a.cfg.BlockSize)
		h := frame.Header{Type: frame.Block, Stream: uint16(s), Len: uint32(m), MsgLen: uint32(len(p)), Seq: a.sendSeq[s]}
		if off+m == len(p) {
			h.Flags = frame.FlagEnd
		}
		b := newBlock(h, p[off:off+m])
		a.blocksOut.Add(1)
		if err := a.dispatch(ctx, b); err != nil {
			a.blocksOut.Add(-1)
			b.free()
			if handed > 0 && ctx.Err() != nil {
				// The blocks handed over cannot be put together
				// without the rest. Abort before the stream is free
				// again: a next Send would take the missing block's
				// number, and the peer would fail on the splice
				// instead of hearing why.
				a.Abort(fmt.Errorf("send cancelled mid-message: %w", ctx.Err()))
			}
			return err
		}
		a.sendSeq[s]++
		if off += m; off == len(p) {
			return nil
		}
	}
}

// blockPool recycles blocks' buffers.
var blockPool = sync.Pool{New: func() any { return new([]byte) }}

func newBlock(h frame.Header, p []byte) *block {
	buf := blockPool.Get().(*[]byte)
	*buf = append((*buf)[:0], p...)
	return &block{h: h, buf: buf}
}

func (b *block) free() { blockPool.Put(b.buf) }

// drainBlocks waits, until deadline, for the writers to write the blocks
// handed to them. It polls: Close calls it once, and a Send that outlived
// drainSends may still hand over blocks meanwhile.
func (a *Assoc) drainBlocks(deadline time.Time) {
	for a.cfg.Striped && a.blocksOut.Load() > 0 && time.Now().Before(deadline) {
		select {
		case <-a.done:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// dispatch hands b to a link's writer, chosen by the driver.
func (a *Assoc) dispatch(ctx context.Context, b *block) error {
	q := a.links[0].blocks
	if a.cfg.Driver == RoundRobin {
		q = a.links[(a.rrNext.Add(1)-1)%uint32(a.sending.Load())].blocks
	}
	select {
	case q <- b:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-a.lclosed:
		return transport.ErrClosed
	case <-a.stop:
		return a.cause()
	}
}

// deliverBlock takes a block from a link's reader: in its turn it joins its
// message, with the held blocks that follow it; ahead of its turn it is held.
func (a *Assoc) deliverBlock(h frame.Header, p []byte) error {
	r := a.reorders[h.Stream]
	r.mu.Lock()
	defer r.mu.Unlock()
	reserved := false
	for h.Seq != r.next {
		if d := h.Seq - r.next; d >= maxAhead {
			return fmt.Errorf("%w: stream %d: block %d when %d is due", transport.ErrProtocol, h.Stream, h.Seq, r.next)
		}
		if _, dup := r.held[h.Seq]; dup {
			return fmt.Errorf("%w: stream %d: block %d twice", transport.ErrProtocol, h.Stream, h.Seq)
		}
		if reserved {
			r.held[h.Seq] = heldBlock{h, p}
			return nil
		}
		// Wait for room without the lock: the blocks due before this one
		// come through other links' readers, which need it. The room may
		// be taken by blocks that wait for this one, so stop waiting when
		// it comes due.
		if r.moved == nil {
			r.moved = make(chan struct{})
		}
		moved := r.moved
		r.mu.Unlock()
		ok, err := a.heldBudget.reserveUnless(heldCost(h.Len), moved)
		r.mu.Lock()
		if err != nil {
			return err
		}
		reserved = ok
	}
	if reserved {
		a.heldBudget.Release(heldCost(h.Len))
	}
	for {
		if err := a.assemble(r, h, p); err != nil {
			return err
		}
		r.next++
		if r.moved != nil {
			close(r.moved)
			r.moved = nil
		}
		hb, ok := r.held[r.next]
		if !ok {
			return nil
		}
		delete(r.held, r.next)
		a.heldBudget.Release(heldCost(hb.h.Len))
		h, p = hb.h, hb.payload
	}
}

// assemble adds the block due next to its stream's message and queues the
// message when it is complete.
func (a *Assoc) assemble(r *reorder, h frame.Header, p []byte) error {
	if !r.started {
		r.budget = !h.End()
		if r.budget {
			if err := a.recvBudget.Reserve(h.MsgLen); err != nil {
				return err
			}
		}
		r.started, r.msgLen, r.msg = true, h.MsgLen, nil
	}
	if h.MsgLen != r.msgLen || uint64(len(r.msg))+uint64(h.Len) > uint64(h.MsgLen) {
		return fmt.Errorf("%w: stream %d: block does not fit its message", transport.ErrProtocol, h.Stream)
	}
	switch {
	case r.msg == nil && h.End():
		r.msg = p // the whole message in one block: no copy
	case r.msg == nil:
		// Room for a few blocks, not for the announced length: a peer
		// could announce huge messages on every stream. append doubles.
		r.msg = append(make([]byte, 0, min(h.MsgLen, 4<<20)), p...)
	default:
		r.msg = append(r.msg, p...)
	}
	complete := len(r.msg) == int(h.MsgLen)
	if complete != h.End() {
		return fmt.Errorf("%w: stream %d: end flag at %d of %d bytes", transport.ErrProtocol, h.Stream, len(r.msg), h.MsgLen)
	}
	if !complete {
		return nil
	}
	if r.budget {
		a.recvBudget.Release(h.MsgLen)
	}
	msg := r.msg
	r.started, r.msg, r.budget = false, nil, false
	a.push(h.Stream, msg)
	return nil
}

package mux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/frame"
)

// link is one connection of an association.
type link struct {
	conn   Conn
	wsem   chan struct{} // cap 1: held while a frame is written to conn
	blocks chan *block   // striped: where the link's writer takes blocks from
	clock  linkClock     // what the keep-alive loop watches (liveness.go)
	// ended is set once no frame may follow on the link: our close frame
	// went out (set under wsem, before it), or the peer's came.
	ended atomic.Bool

	// Guarded by wsem: scratch space for a frame's writev.
	hdr  [frame.BlockHeaderLen]byte
	iov  [2][]byte
	bufs net.Buffers

	dlMu  sync.Mutex // guards gen and armed, which let a ctx interrupt one write
	gen   uint64
	armed bool
}

var longAgo = time.Unix(1, 0)

// write sends one frame. If ctx ends meanwhile, the write is interrupted by
// a past deadline and the returned count tells how much went out.
func (l *link) write(ctx context.Context, h frame.Header, payload []byte) (int64, error) {
	l.iov[0], l.iov[1] = l.hdr[:h.Put(l.hdr[:])], payload
	l.bufs = l.iov[:]
	if len(payload) == 0 {
		// A connection without writev (TLS) gets one Write per buffer:
		// an empty second Write could fail on a connection the peer has
		// closed after reading the whole frame, making a Send that
		// arrived an error.
		l.bufs = l.iov[:1]
	}
	return l.writeBufs(ctx, &l.bufs)
}

// writeBufs writes bufs (consuming it) as write does one frame.
func (l *link) writeBufs(ctx context.Context, bufs *net.Buffers) (int64, error) {
	if ctx.Done() == nil {
		return bufs.WriteTo(l.conn)
	}
	gen := l.arm()
	stop := context.AfterFunc(ctx, func() { l.interrupt(gen) })
	n, err := bufs.WriteTo(l.conn)
	if !l.disarm() || !stop() {
		l.conn.SetWriteDeadline(time.Time{})
	}
	return n, err
}

func (l *link) arm() uint64 {
	l.dlMu.Lock()
	defer l.dlMu.Unlock()
	l.gen++
	l.armed = true
	return l.gen
}

// disarm reports whether no interrupt happened.
func (l *link) disarm() bool {
	l.dlMu.Lock()
	defer l.dlMu.Unlock()
	ok := l.armed
	l.armed = false
	return ok
}

// interrupt fails the write of generation gen, if it is still under way.
func (l *link) interrupt(gen uint64) {
	l.dlMu.Lock()
	defer l.dlMu.Unlock()
	if l.armed && l.gen == gen {
		l.armed = false
		l.conn.SetWriteDeadline(longAgo)
	}
}

// acquire takes sem, or fails when ctx ends or the association closes.
func (a *Assoc) acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-a.lclosed:
		return transport.ErrClosed
	case <-a.done:
		return a.cause()
	}
}

// Send sends p as one message on stream s, cut into frames that may
// interleave with other streams' frames on the same link.
func (a *Assoc) Send(ctx context.Context, s int, p []byte) error {
	if err := a.checkSend(s, [][]byte{p}); err != nil {
		return err
	}
	if err := a.acquire(ctx, a.ssem[s]); err != nil {
		return err
	}
	defer func() { <-a.ssem[s] }()
	return a.sendLocked(ctx, s, p)
}

// sendLocked sends p as one message on stream s, whose send semaphore the
// caller holds.
func (a *Assoc) sendLocked(ctx context.Context, s int, p []byte) error {
	release, err := a.reserveSend(ctx, len(p))
	if err != nil {
		return err
	}
	defer release()
	if a.cfg.Striped {
		return a.sendStriped(ctx, s, p)
	}
	l := a.linkOf(s)
	h := frame.Header{Type: frame.Data, Stream: uint16(s), MsgLen: uint32(len(p))}
	for off := 0; ; {
		n := min(len(p)-off, frame.MaxPayload)
		h.Len, h.Flags = uint32(n), 0
		if off+n == len(p) {
			h.Flags = frame.FlagEnd
		}
		if err := a.writeFrame(ctx, l, h, p[off:off+n], off > 0); err != nil {
			return err
		}
		if off += n; off == len(p) {
			return nil
		}
	}
}

// writeFrame writes one frame of a message; mid tells that earlier frames of
// the message are on the wire already.
func (a *Assoc) writeFrame(ctx context.Context, l *link, h frame.Header, payload []byte, mid bool) error {
	return a.writeOn(ctx, l, mid, func() (int64, error) { return l.write(ctx, h, payload) })
}

// writeOn runs write, which writes whole frames on l, holding l's write
// semaphore, and maps its failure as writeFrame says.
func (a *Assoc) writeOn(ctx context.Context, l *link, mid bool, write func() (int64, error)) error {
	if err := a.acquire(ctx, l.wsem); err != nil {
		if mid {
			a.abortCancelled(ctx)
		}
		return err
	}
	if err := a.sendErr(); err != nil {
		<-l.wsem
		return err
	}
	a.dataWritten(l, a.lv.now())
	n, err := write()
	if err == nil {
		now := a.lv.now()
		l.clock.sent.Store(int64(now))
		a.dataWritten(l, now)
		<-l.wsem
		return nil
	}
	<-l.wsem
	if cerr := ctx.Err(); cerr != nil && isTimeout(err) {
		if n > 0 || mid {
			a.abortCancelled(ctx)
		}
		return cerr
	}
	return a.writeErr(err)
}

// abortCancelled tears the association down after a cancelled Send left a
// partial message on the wire: the byte stream cannot be resynchronised.
func (a *Assoc) abortCancelled(ctx context.Context) {
	if ctx.Err() != nil {
		go a.Abort(fmt.Errorf("send cancelled mid-message: %w", ctx.Err()))
	}
}

// writeErr maps a failed write to the association's state: an association
// that is failing already (a lost peer, say) reports why.
func (a *Assoc) writeErr(err error) error {
	if serr := a.sendErr(); serr != nil {
		return serr
	}
	if ferr := a.failure(); ferr != nil {
		return ferr
	}
	err = fmt.Errorf("%w: connection lost: %v", transport.ErrPeerClosed, err)
	a.fail(err)
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

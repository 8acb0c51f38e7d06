package netem

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DirStats counts one direction's packets. Lost* and Dropped* packets were
// read but never delivered.
type DirStats struct {
	InPackets    uint64 `json:"in_packets"`
	InBytes      uint64 `json:"in_bytes"`
	OutPackets   uint64 `json:"out_packets"`
	OutBytes     uint64 `json:"out_bytes"`
	LostRandom   uint64 `json:"lost_random"`
	LostBurst    uint64 `json:"lost_burst"`
	DroppedQueue uint64 `json:"dropped_queue"`
	// DroppedOverflow counts packets dropped because the delay line held
	// maxInFlight bytes: the emulator's own limit, not the model's.
	DroppedOverflow uint64 `json:"dropped_overflow"`
	// DroppedCut counts packets dropped while the path was cut (Bed.Cut).
	DroppedCut uint64 `json:"dropped_cut,omitempty"`
	// QueueBytes and QueuePackets are the bottleneck's backlog when read.
	QueueBytes   int `json:"queue_bytes"`
	QueuePackets int `json:"queue_packets"`
	// MaxLateUs is the latest a packet left after its due time, in µs: the
	// emulator's timing error.
	MaxLateUs int64 `json:"max_late_us"`
}

// maxInFlight bounds the bytes a direction's delay line holds: 64 MiB is
// 10 Gbit/s × 50 ms, past anything the emulator carries.
const maxInFlight = 64 << 20

// pipe carries one direction: a reader goroutine (owner of the model)
// reads from src and schedules each packet that passes; a writer goroutine
// writes them to dst when due.
type pipe struct {
	src, dst *os.File
	m        *model
	mtu      int
	clock    clock

	mu       sync.Mutex // guards line and lineB
	line     []packet   // scheduled packets, in delivery order
	lineB    int
	wake     chan struct{} // the line went from empty to not
	bufs     sync.Pool
	inPk     atomic.Uint64
	inB      atomic.Uint64
	outPk    atomic.Uint64
	outB     atomic.Uint64
	lostR    atomic.Uint64
	lostB    atomic.Uint64
	dropQ    atomic.Uint64
	dropO    atomic.Uint64
	dropC    atomic.Uint64
	cut      atomic.Bool // Bed.Cut: every packet is dropped
	backB    atomic.Int64
	backP    atomic.Int64
	maxLate  atomic.Int64
	stopping atomic.Bool
}

type packet struct {
	buf *[]byte // from bufs
	n   int     // bytes in *buf
	due int64
}

func newPipe(src, dst *os.File, m *model, mtu int, c clock) *pipe {
	p := &pipe{src: src, dst: dst, m: m, mtu: mtu, clock: c, wake: make(chan struct{}, 1)}
	p.bufs.New = func() any { b := make([]byte, mtu+64); return &b }
	return p
}

// read loops until src is closed.
func (p *pipe) read() error {
	for {
		buf := p.bufs.Get().(*[]byte)
		n, err := p.src.Read(*buf)
		if err != nil {
			if p.stopping.Load() || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		if n == len(*buf) { // larger than the MTU allows: truncated, so not forwarded
			p.dropO.Add(1)
			p.bufs.Put(buf)
			continue
		}
		now := p.clock.now()
		p.inPk.Add(1)
		p.inB.Add(uint64(n))
		if p.cut.Load() {
			p.dropC.Add(1)
			p.bufs.Put(buf)
			continue
		}
		due, v := p.m.admit(now, n)
		qb, qp := p.m.backlog()
		p.backB.Store(int64(qb))
		p.backP.Store(int64(qp))
		if v != pass {
			p.count(v)
			p.bufs.Put(buf)
			continue
		}
		p.schedule(packet{buf, n, due})
	}
}

func (p *pipe) count(v verdict) {
	switch v {
	case lostRandom:
		p.lostR.Add(1)
	case lostBurst:
		p.lostB.Add(1)
	case droppedTail:
		p.dropQ.Add(1)
	}
}

// schedule appends pk to the delay line, or drops it when the line is full.
func (p *pipe) schedule(pk packet) {
	p.mu.Lock()
	if p.lineB+pk.n > maxInFlight {
		p.mu.Unlock()
		p.dropO.Add(1)
		p.bufs.Put(pk.buf)
		return
	}
	p.line = append(p.line, pk)
	p.lineB += pk.n
	first := len(p.line) == 1
	p.mu.Unlock()
	if first {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// maxSleep bounds one sleep of the writer so that it notices a stop.
const maxSleep = 20 * time.Millisecond

// write loops until done is closed, writing each packet when it is due. It
// runs on a locked OS thread that sleeps in clock_nanosleep with a timer
// slack of 1 ns: Go's timers wake a few hundred µs to a millisecond late,
// which would add to the emulated delay.
func (p *pipe) write(done <-chan struct{}) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	for {
		p.mu.Lock()
		var pk packet
		ok := len(p.line) > 0
		if ok {
			pk = p.line[0]
		}
		p.mu.Unlock()
		if !ok {
			select {
			case <-p.wake:
				continue
			case <-done:
				return nil
			}
		}
		now := p.clock.now()
		if wait := pk.due - now; wait > 0 {
			until := unix.NsecToTimespec(min(pk.due, now+int64(maxSleep)))
			_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &until, nil)
			select {
			case <-done:
				return nil
			default:
			}
			continue
		}
		if late := (now - pk.due) / 1000; late > p.maxLate.Load() {
			p.maxLate.Store(late)
		}
		p.pop()
		if _, err := p.dst.Write((*pk.buf)[:pk.n]); err != nil && !p.stopping.Load() && !errors.Is(err, os.ErrClosed) {
			// The kernel refused one packet (e.g. its backlog was
			// full): a loss the model did not choose, counted as such.
			p.dropO.Add(1)
		} else {
			p.outPk.Add(1)
			p.outB.Add(uint64(pk.n))
		}
		p.bufs.Put(pk.buf)
	}
}

// clock reads CLOCK_MONOTONIC in ns through Go's cheap monotonic clock.
type clock struct {
	mono int64     // CLOCK_MONOTONIC at start
	wall time.Time // time.Now at the same instant
}

func newClock() clock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return clock{mono: ts.Nano(), wall: time.Now()}
}

func (c clock) now() int64 { return c.mono + int64(time.Since(c.wall)) }

// pop removes the head of the delay line.
func (p *pipe) pop() {
	p.mu.Lock()
	p.lineB -= p.line[0].n
	p.line[0] = packet{}
	p.line = p.line[1:]
	if len(p.line) == 0 {
		p.line = p.line[:0:0]
	}
	p.mu.Unlock()
}

func (p *pipe) stats() DirStats {
	return DirStats{
		InPackets: p.inPk.Load(), InBytes: p.inB.Load(), OutPackets: p.outPk.Load(), OutBytes: p.outB.Load(),
		LostRandom: p.lostR.Load(), LostBurst: p.lostB.Load(), DroppedQueue: p.dropQ.Load(),
		DroppedOverflow: p.dropO.Load(), QueueBytes: int(p.backB.Load()), QueuePackets: int(p.backP.Load()),
		MaxLateUs: p.maxLate.Load(), DroppedCut: p.dropC.Load(),
	}
}

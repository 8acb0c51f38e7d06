package sctp

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Batched UDP I/O. pion/sctp reads and writes one SCTP packet per call on
// its net.Conn; a system call per packet was a quarter of the transport's
// CPU time at MTU 1452 (a sixth at 8192). A udpSocket therefore reads with recvmmsg and writes with
// sendmmsg, and where the kernel offers them lets it coalesce packets:
// UDP GSO (UDP_SEGMENT) sends a run of equal-sized packets to one peer as
// one buffer, and UDP GRO (UDP_GRO) receives a run as one buffer with its
// segment size, so that on loopback such a run crosses the stack once.
// pion's writeLoop (third_party/pion-sctp) hands each round of packets over
// with WriteOwned and then calls Flush, which sends the round from its own
// goroutine (txRound). A plain Write (a writer without WriteOwned) is queued (copied)
// and sent by a flusher goroutine, which sends whatever accumulated while
// its previous system call ran. The socket is kept out of Go's poller, so
// that neither what it sends nor what arrives while its reader lingers
// wakes the process (quietFD, rawudp.go).

const (
	// readBatch is how many datagrams one recvmmsg may return on a
	// listener's socket, which serves every association on its port: as
	// many as a busy paced receiver takes in its linger (coalesce.go), so
	// that it reads them, and acknowledges them, in one go (2 MiB of
	// GRO-sized buffers a listener); dialReadBatch on a dialer's, which
	// serves one, so that they cost 256 KiB per dialed association, not 2
	// MiB (a server dials every worker).
	readBatch     = 32
	dialReadBatch = 4
	// groBuffer holds one coalesced run (a UDP datagram's largest size).
	groBuffer = 64 << 10
	// maxQueue bounds the packets waiting for the flusher; Write blocks
	// beyond it.
	maxQueue = 256
	// maxGSOBytes and maxGSOSegments bound one GSO send (the kernel's
	// limits are 64 KiB less headers and 64 or 128 segments).
	maxGSOBytes    = 60 << 10
	maxGSOSegments = 64
	// drainTimeout bounds how long closing a socket waits for queued
	// packets to leave.
	drainTimeout = time.Second
)

// udpSocket is a UDP socket with batched reads (by one reader goroutine at
// a time) and queued, batched writes, kept out of Go's poller (quietFD).
type udpSocket struct {
	q         *quietFD
	connected bool // Write addresses are ignored: the socket is connected
	gro       bool
	// gso: the kernel takes UDP_SEGMENT (and has not refused a run), for
	// the packets whose peer reads runs (outPacket.gso).
	gso atomic.Bool

	rxPool sync.Pool // of *rxBuf
	rd     reader
	linger atomic.Int64 // receive coalescing delay in ns (coalesce.go); 0: none

	mu       sync.Mutex // guards the fields below
	changed  *sync.Cond // queue shrank, flusher stopped or closing began
	queue    []outPacket
	spare    []outPacket
	flushing bool
	closing  bool
	closed   bool

	f flusher // used by the one flush goroutine at a time
}

// newUDPSocket takes uc's socket over (uc is closed: see quietFD).
func newUDPSocket(uc *net.UDPConn, connected bool) (*udpSocket, error) {
	s := &udpSocket{connected: connected}
	s.changed = sync.NewCond(&s.mu)
	if rc, err := uc.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			s.gro = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
			_, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
			s.gso.Store(err == nil)
		})
	}
	q, err := newQuietFD(uc)
	if err != nil {
		return nil, err
	}
	s.q = q
	size := maxDatagram + 1 // one more, so that an oversize datagram shows
	if s.gro {
		size = groBuffer
	}
	s.rxPool.New = func() any { return &rxBuf{b: make([]byte, size), pool: &s.rxPool} }
	s.rd.init(s)
	return s, nil
}

// localAddr is the socket's address.
func (s *udpSocket) localAddr() *net.UDPAddr { return s.q.laddr }

// setReadDeadline bounds the reader's waits.
func (s *udpSocket) setReadDeadline(t time.Time) error { return s.q.setReadDeadline(t) }

// rxBuf is one received datagram (or GRO run), shared by the packets cut
// from it until each has been released.
type rxBuf struct {
	b    []byte
	refs atomic.Int32
	segs int // packets cut from it
	pool *sync.Pool
}

func (r *rxBuf) release() {
	if r.refs.Add(-1) == 0 && r.pool != nil {
		r.pool.Put(r)
	}
}

// packet is one received SCTP packet: p lies in rb, which the receiver
// releases once it has copied p.
type packet struct {
	p    []byte
	rb   *rxBuf
	from netip.AddrPort // the zero value on a connected socket
}

// compact moves a packet into a buffer of its own when it holds more than
// four times its size of a shared receive buffer (a lone small datagram
// in a 64 KiB buffer, or a run of a few small ones), so that packets
// queued for a slow reader hold at most four times their size, whatever a
// peer sends; bigger packets are not copied twice. A packet of more than
// a quarter of smallRxSize and up to that (a full packet of a path with an
// Ethernet MTU) moves into a pooled buffer of that size, any other into a
// new buffer of its own size.
func (s *udpSocket) compact(p packet) packet {
	if 4*len(p.p) > p.share() {
		return p
	}
	var rb *rxBuf
	if 4*len(p.p) > smallRxSize && len(p.p) <= smallRxSize {
		rb = smallRxPool.Get().(*rxBuf)
		rb.segs = 0
	} else {
		rb = &rxBuf{b: make([]byte, len(p.p))}
	}
	n := copy(rb.b, p.p)
	rb.refs.Store(1)
	p.rb.release()
	p.p, p.rb = rb.b[:n], rb
	return p
}

// smallRxSize is the size of smallRxPool's buffers, into which compact
// moves packets of an Ethernet MTU's size.
const smallRxSize = 2048

var smallRxPool sync.Pool // of *rxBuf

func init() {
	smallRxPool.New = func() any { return &rxBuf{b: make([]byte, smallRxSize), pool: &smallRxPool} }
}

// share is the part of its receive buffer p holds.
func (p packet) share() int { return len(p.rb.b) / max(p.rb.segs, 1) }

// reader cuts batches of datagrams into packets.
type reader struct {
	s        *udpSocket
	ms       []mmsghdr
	iovs     []unix.Iovec
	names    []sockaddr // nil on a connected socket
	oobs     [][]byte   // GRO's control messages, nil without GRO
	bufs     []*rxBuf
	n, i     int // datagrams in the batch, next one
	seg      int // segment size of datagram i-1's run, 0 for a single packet
	rest     []byte
	cur      *rxBuf
	from     netip.AddrPort
	last     time.Time // when the last batch was read
	lingered int       // reads that waited (coalesce.go), for tests
}

func (r *reader) init(s *udpSocket) {
	r.s = s
	n := readBatch
	if s.connected {
		n = dialReadBatch
	}
	r.ms = make([]mmsghdr, n)
	r.iovs = make([]unix.Iovec, n)
	r.bufs = make([]*rxBuf, n)
	if !s.connected {
		r.names = make([]sockaddr, n)
	}
	for i := range r.ms {
		r.bufs[i] = s.rxPool.Get().(*rxBuf)
		if s.gro {
			r.oobs = append(r.oobs, make([]byte, unix.CmsgSpace(4)))
		}
	}
}

// next returns the next packet, reading a new batch when the last one is
// used up. Only one goroutine may call it at a time.
func (r *reader) next() (packet, error) {
	for len(r.rest) == 0 {
		if r.i == r.n {
			if err := r.fill(); err != nil {
				return packet{}, err
			}
		}
		m := &r.ms[r.i]
		r.cur, r.from, r.rest, r.seg = r.bufs[r.i], netip.AddrPort{}, r.bufs[r.i].b[:m.len], 0
		if r.names != nil {
			r.from = getAddr(&r.names[r.i], m.hdr.Namelen)
		}
		if r.s.gro {
			r.seg = groSegment(r.oobs[r.i][:m.hdr.Controllen])
		}
		if r.seg <= 0 || r.seg >= len(r.rest) {
			r.seg = len(r.rest)
		}
		r.cur.segs = (len(r.rest) + r.seg - 1) / r.seg
		r.cur.refs.Store(int32(r.cur.segs))
		if len(r.rest) == 0 { // an empty datagram: hand it on as one packet
			r.cur.segs = 1
			r.cur.refs.Store(1)
			r.bufs[r.i] = nil
			r.i++
			return packet{p: r.rest, rb: r.cur, from: r.from}, nil
		}
		r.bufs[r.i] = nil // handed on with its packets
		r.i++
	}
	n := min(r.seg, len(r.rest))
	p := packet{p: r.rest[:n:n], rb: r.cur, from: r.from}
	r.rest = r.rest[n:]
	return p, nil
}

// ready reports whether next has a packet at hand, without reading the
// socket.
func (r *reader) ready() bool { return len(r.rest) > 0 || r.i < r.n }

// peekFrom returns the sender of the packet next has at hand (the zero
// address on a connected socket), and whether it has one.
func (r *reader) peekFrom() (netip.AddrPort, bool) {
	switch {
	case len(r.rest) > 0:
		return r.from, true
	case r.i >= r.n:
		return netip.AddrPort{}, false
	case r.names == nil:
		return netip.AddrPort{}, true
	}
	return getAddr(&r.names[r.i], r.ms[r.i].hdr.Namelen), true
}

// fill reads the next batch into fresh buffers. A socket that lingers
// (coalesce.go) is disarmed meanwhile, so that the packets that come while
// it lingers wake nobody.
func (r *reader) fill() error {
	for i := range r.ms {
		if r.bufs[i] == nil {
			r.bufs[i] = r.s.rxPool.Get().(*rxBuf)
		}
		b := r.bufs[i].b
		r.iovs[i] = unix.Iovec{Base: &b[0]}
		r.iovs[i].SetLen(len(b))
		h := &r.ms[i].hdr
		*h = unix.Msghdr{Iov: &r.iovs[i], Iovlen: 1}
		if r.names != nil {
			h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
			h.Namelen = uint32(unsafe.Sizeof(r.names[i]))
		}
		if r.oobs != nil {
			h.Control = &r.oobs[i][0]
			h.SetControllen(len(r.oobs[i]))
		}
	}
	d := time.Duration(r.s.linger.Load())
	if d > 0 && r.n > 0 && r.n < len(r.ms) {
		if wait := d - time.Since(r.last); wait > 0 {
			time.Sleep(wait)
			r.lingered++
		}
	}
	r.i, r.n = 0, 0
	n, err := r.s.q.recv(r.ms)
	if err != nil {
		return err
	}
	if d > 0 {
		r.s.q.disarm()
	}
	r.n, r.last = n, time.Now()
	return nil
}

// groSegment returns the segment size a UDP_GRO control message reports,
// or 0.
func groSegment(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_UDP && m.Header.Type == unix.UDP_GRO && len(m.Data) >= 4 {
			return int(binary.NativeEndian.Uint32(m.Data))
		}
	}
	return 0
}

// sendErr holds the first send failure of one writer (an association's
// conn); its later writes return it.
type sendErr struct{ err atomic.Pointer[error] }

func (e *sendErr) get() error {
	if p := e.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (e *sendErr) set(err error) { e.err.CompareAndSwap(nil, &err) }

// outPacket is a queued datagram.
type outPacket struct {
	b       []byte
	pooled  *[]byte        // b's buffer from bufPool (a copy), or nil
	release func([]byte)   // gives b back to its writer (owned), or nil
	to      netip.AddrPort // the zero value on a connected socket
	owner   *sendErr
	// gso: the peer reads a GSO run, so the packet may leave in one with
	// its neighbours (runs). Only a peer known to be braid's userspace
	// stack does: on loopback (and between network namespaces over veth)
	// a run reaches the receiving socket whole, and Linux's SCTP-over-UDP
	// receiver (6.1, in make vm-test) took one for a single packet and
	// aborted the association. A DTLS peer is always braid's userspace
	// stack: the kernel's SCTP has no DTLS.
	gso bool
}

// done gives the packet's buffer back.
func (p *outPacket) done() {
	switch {
	case p.pooled != nil:
		putBuf(p.pooled)
	case p.release != nil:
		p.release(p.b)
	}
	*p = outPacket{}
}

// write queues a copy of p for to (ignored when connected) and returns at
// once unless the queue is full. An earlier failure of owner's packets is
// returned instead.
func (s *udpSocket) write(p []byte, to netip.AddrPort, owner *sendErr, gso bool) (int, error) {
	if err := owner.get(); err != nil {
		return 0, err
	}
	b := getBuf()
	*b = append((*b)[:0], p...)
	return s.enqueue(outPacket{b: *b, pooled: b, to: to, owner: owner, gso: gso})
}

// txRound holds the packets one writer (an association's pion writeLoop)
// wrote with WriteOwned until its Flush, which sends them together from the
// writer's goroutine: no flusher goroutine, no copy.
type txRound struct {
	mu     sync.Mutex // WriteOwned and Flush come from writeLoop, Close may not
	pkts   []outPacket
	f      flusher
	closed bool // the last flush is done: add refuses
	// held: plain writes (copies) join the round too, until the flush;
	// set without mu, cleared under it. A DTLS conn sets it for the
	// records it seals from pion's WriteOwned (sealedConn), so that a
	// round of records leaves in one batch as a round of plaintext packets
	// does.
	held atomic.Bool
}

// write holds a copy of p for the next flush if the round is held, and
// reports whether it took p (held, or failed). A write that races the
// flush ending the round is either in that flush or not taken. A round
// that reaches maxQueue packets sends them on s at once, as the socket's
// queue would, so that a round of a whole window holds no more.
func (t *txRound) write(s *udpSocket, p []byte, to netip.AddrPort, owner *sendErr, gso bool) (n int, took bool, err error) {
	if !t.held.Load() {
		return 0, false, nil
	}
	if err := owner.get(); err != nil {
		return 0, true, err
	}
	b := getRecordBuf(len(p))
	*b = append((*b)[:0], p...)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		putBuf(b)
		return 0, true, net.ErrClosed
	case !t.held.Load(): // the round was flushed meanwhile
		putBuf(b)
		return 0, false, nil
	}
	if len(t.pkts) >= maxQueue {
		t.send(s, owner)
	}
	t.pkts = append(t.pkts, outPacket{b: *b, pooled: b, to: to, owner: owner, gso: gso})
	return len(p), true, nil
}

// add holds p for the next flush, or reports false once the round is
// closed (the caller then releases p).
func (t *txRound) add(p outPacket) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.pkts = append(t.pkts, p)
	return true
}

// close flushes what is held and refuses later adds, so that no packet is
// held forever after a conn's Close.
func (t *txRound) close(s *udpSocket, owner *sendErr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.held.Store(false)
	t.send(s, owner)
	return owner.get()
}

// flush sends the held packets on s, ends a held round, and returns
// owner's first send error.
func (t *txRound) flush(s *udpSocket, owner *sendErr) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held.Store(false)
	t.send(s, owner)
	return owner.get()
}

// send sends the held packets on s and gives their buffers back. The
// caller holds t.mu.
func (t *txRound) send(s *udpSocket, owner *sendErr) {
	if len(t.pkts) == 0 {
		return
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		owner.set(net.ErrClosed)
	} else {
		t.f.send(s, t.pkts)
	}
	for i := range t.pkts {
		t.pkts[i].done()
	}
	t.pkts = t.pkts[:0]
}

// enqueue queues p for the flusher goroutine.
func (s *udpSocket) enqueue(p outPacket) (int, error) {
	n := len(p.b)
	if s.connected {
		p.to = netip.AddrPort{}
	}
	s.mu.Lock()
	for len(s.queue) >= maxQueue && !s.closing {
		s.changed.Wait()
	}
	if s.closing {
		s.mu.Unlock()
		p.done()
		return 0, net.ErrClosed
	}
	s.queue = append(s.queue, p)
	if !s.flushing {
		s.flushing = true
		go s.flush()
	}
	s.mu.Unlock()
	return n, nil
}

// flush sends queued packets until the queue is empty.
func (s *udpSocket) flush() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.flushing = false
			s.changed.Broadcast()
			s.mu.Unlock()
			return
		}
		batch := s.queue
		s.queue, s.spare = s.spare[:0], nil
		s.changed.Broadcast()
		s.mu.Unlock()
		s.f.send(s, batch)
		for i := range batch {
			batch[i].done()
		}
		s.mu.Lock()
		s.spare = batch[:0]
		s.mu.Unlock()
	}
}

// flusher holds one flush's scratch space.
type flusher struct {
	ms    []mmsghdr
	pkts  [][]outPacket // the packets of each message
	iovs  []unix.Iovec  // the messages' buffers, in order
	names []sockaddr
	oob   [][]byte
}

// send sends batch: runs of equal-sized packets to one peer (the last may
// be shorter) as GSO messages, all messages with sendmmsg.
func (f *flusher) send(s *udpSocket, batch []outPacket) {
	f.pkts, f.iovs = f.pkts[:0], f.iovs[:0]
	gso := s.gso.Load()
	for i := 0; i < len(batch); {
		j := i + 1
		if gso {
			j = gsoRun(batch, i)
		}
		f.pkts = append(f.pkts, batch[i:j])
		i = j
	}
	f.build(s)
	for done := 0; done < len(f.ms); {
		n, err := s.q.send(f.ms[done:])
		done += n
		if err == nil || done == len(f.ms) {
			continue
		}
		if len(f.pkts[done]) > 1 && (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EMSGSIZE)) {
			// The kernel, the device or the path refused segmentation: stop
			// using it and send this run's packets one by one.
			s.gso.Store(false)
			for _, p := range f.pkts[done] {
				if err := f.sendOne(s, p); err != nil {
					p.owner.set(err)
				}
			}
		} else {
			f.pkts[done][0].owner.set(err)
		}
		done++
	}
	clear(f.pkts) // drop the references to the packets
}

// build makes one message of each run in f.pkts, with a UDP_SEGMENT
// control message where a run has more than one packet.
func (f *flusher) build(s *udpSocket) {
	n := len(f.pkts)
	for _, pkts := range f.pkts {
		for _, p := range pkts {
			iov := unix.Iovec{Base: unsafe.SliceData(p.b)}
			iov.SetLen(len(p.b))
			f.iovs = append(f.iovs, iov)
		}
	}
	f.ms = sized(f.ms, n)
	if !s.connected {
		f.names = sized(f.names, n)
	}
	for len(f.oob) < n {
		f.oob = append(f.oob, make([]byte, unix.CmsgSpace(2)))
	}
	k := 0 // the run's first buffer in f.iovs
	for i, pkts := range f.pkts {
		h := &f.ms[i].hdr
		*h = unix.Msghdr{Iov: &f.iovs[k]}
		h.SetIovlen(len(pkts))
		k += len(pkts)
		if !s.connected {
			h.Name = (*byte)(unsafe.Pointer(&f.names[i]))
			h.Namelen = putAddr(&f.names[i], pkts[0].to, s.q.v6)
		}
		if len(pkts) > 1 {
			c := gsoControl(f.oob[i], len(pkts[0].b))
			h.Control = &c[0]
			h.SetControllen(len(c))
		}
	}
}

// sendOne sends one packet in a message of its own.
func (f *flusher) sendOne(s *udpSocket, p outPacket) error {
	iov := []unix.Iovec{{Base: unsafe.SliceData(p.b)}}
	iov[0].SetLen(len(p.b))
	ms := []mmsghdr{{hdr: unix.Msghdr{Iov: &iov[0], Iovlen: 1}}}
	var name sockaddr
	if !s.connected {
		ms[0].hdr.Name = (*byte)(unsafe.Pointer(&name))
		ms[0].hdr.Namelen = putAddr(&name, p.to, s.q.v6)
	}
	_, err := s.q.send(ms)
	return err
}

// sized returns s with length n, reusing its array when it is big enough.
func sized[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// gsoRun returns the end of the GSO run that starts at batch[i].
func gsoRun(batch []outPacket, i int) int {
	first := batch[i]
	if !first.gso {
		return i + 1
	}
	size, total := len(first.b), len(first.b)
	j := i + 1
	for ; j < len(batch) && j-i < maxGSOSegments; j++ {
		p := batch[j]
		n := len(p.b)
		if p.to != first.to || p.owner != first.owner || !p.gso || n > size || total+n > maxGSOBytes {
			break
		}
		total += n
		if n < size {
			return j + 1 // a shorter packet ends the run
		}
	}
	return j
}

// gsoControl writes a UDP_SEGMENT control message for segments of size
// bytes into b.
func gsoControl(b []byte, size int) []byte {
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.SOL_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], uint16(size))
	return b[:unix.CmsgSpace(2)]
}

// close stops new writes, waits (a bounded time) for queued packets to
// leave, and closes the socket.
func (s *udpSocket) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closing, s.closed = true, true
	s.changed.Broadcast()
	if s.flushing {
		t := time.AfterFunc(drainTimeout, s.q.stopWaiting) // a full send buffer ends the flush
		for s.flushing {
			s.changed.Wait()
		}
		t.Stop()
	}
	s.mu.Unlock()
	return s.q.close()
}

package sctp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// quietFD is a UDP socket that wakes its process only for what it reads.
//
// Go's poller watches a socket for input and output alike (edge-triggered),
// so every packet the socket sends wakes a thread blocked in epoll_wait
// when the kernel frees it (the socket has room to write again), and every
// packet that arrives wakes one too, even while no goroutine waits to read
// (the reader lingers to take packets in batches, coalesce.go). At 100
// Mbit/s those wake-ups, each a thread's sleep, wake and search for work,
// and the runtime's sysmon that every system call after an idle spell sets
// spinning again, were half of an association's CPU time.
//
// So the socket stays out of Go's poller. A private epoll instance watches
// it for input only, and Go's poller watches that instance: output never
// wakes anyone, and input wakes the process only while the socket is armed,
// which the reader arranges: armed when it is about to wait, disarmed
// when it lingers (one epoll_ctl each). recvmmsg and sendmmsg are raw
// system calls on the non-blocking socket: they never block, and so, unlike
// the runtime's blocking system calls, they leave sysmon asleep.
type quietFD struct {
	// mu guards the descriptor's life: recvmmsg and sendmmsg hold it for
	// reading, close for writing, so that a closed descriptor's number,
	// which the kernel may give to another file, is never used.
	mu     sync.RWMutex
	fd     int // -1 once closed
	epfd   int
	ep     *os.File        // the private epoll instance (epfd), in Go's poller
	rc     syscall.RawConn // ep's
	armed  bool            // the socket is in ep's interest list for input; the reader's
	giveUp atomic.Bool     // a full send buffer is no longer waited out (closing)
	laddr  *net.UDPAddr
	raddr  *net.UDPAddr // nil: not connected
	v6     bool
	// beforeArm, if set, runs in tryRecv between its first look and the
	// arming (tests send a datagram there).
	beforeArm func()
}

// newQuietFD takes uc's socket out of Go's poller: it keeps a duplicate of
// its descriptor and closes uc (also on failure).
func newQuietFD(uc *net.UDPConn) (*quietFD, error) {
	q := &quietFD{fd: -1}
	q.laddr, _ = uc.LocalAddr().(*net.UDPAddr)
	q.raddr, _ = uc.RemoteAddr().(*net.UDPAddr)
	q.v6 = q.laddr != nil && q.laddr.IP.To4() == nil
	rc, err := uc.SyscallConn()
	var derr error
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			q.fd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		})
	}
	_ = uc.Close() // Go's poller lets go of the socket; the duplicate keeps it
	if err != nil || derr != nil {
		return nil, fmt.Errorf("sctp: socket: %w", errors.Join(err, derr))
	}
	if err := q.init(); err != nil {
		_ = unix.Close(q.fd)
		return nil, fmt.Errorf("sctp: socket: %w", err)
	}
	return q, nil
}

func (q *quietFD) init() error {
	if err := unix.SetNonblock(q.fd, true); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		_ = unix.Close(ep)
		return err
	}
	q.epfd = ep
	q.ep = os.NewFile(uintptr(ep), "sctp-epoll") // non-blocking: Go's poller watches it
	if q.rc, err = q.ep.SyscallConn(); err != nil {
		_ = q.ep.Close()
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(q.fd)} //nolint:gosec // G115: a descriptor
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, q.fd, &ev); err != nil {
		_ = q.ep.Close()
		return err
	}
	q.armed = true
	return nil
}

// mmsghdr is struct mmsghdr (sendmmsg(2)).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// recv reads up to len(ms) datagrams, waiting (in Go's poller) until
// there is at least one. Only one goroutine may call recv and disarm.
func (q *quietFD) recv(ms []mmsghdr) (int, error) {
	var n int
	var errno syscall.Errno
	err := q.rc.Read(func(uintptr) bool {
		n, errno = q.tryRecv(ms)
		return errno != unix.EAGAIN
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", errno)
	}
	return n, nil
}

// tryRecv reads what has come. With nothing there, it arms the socket, if
// it was not, and looks once more: arming reports only what comes after
// it (epoll_ctl's MOD finds the socket on the instance's ready list, which
// no one empties, and so reports nothing), and a datagram that came
// between the first look and the arming would wait for the next one.
func (q *quietFD) tryRecv(ms []mmsghdr) (int, syscall.Errno) {
	q.mu.RLock()
	n, errno := recvmmsg(q.fd, ms)
	q.mu.RUnlock()
	if errno != unix.EAGAIN || q.armed {
		return n, errno
	}
	if q.beforeArm != nil {
		q.beforeArm()
	}
	q.setArmed(true)
	q.mu.RLock()
	n, errno = recvmmsg(q.fd, ms)
	q.mu.RUnlock()
	return n, errno
}

// disarm stops input from waking the process until the next recv waits.
func (q *quietFD) disarm() {
	if q.armed {
		_ = q.rc.Control(func(uintptr) { q.setArmed(false) }) // holds ep open
	}
}

// setArmed runs where ep cannot be closed meanwhile (in rc's Read or
// Control).
func (q *quietFD) setArmed(on bool) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.fd < 0 {
		return
	}
	var ev unix.EpollEvent
	ev.Fd = int32(q.fd) //nolint:gosec // G115: a descriptor
	if on {
		ev.Events = unix.EPOLLIN
	}
	if unix.EpollCtl(q.epfd, unix.EPOLL_CTL_MOD, q.fd, &ev) == nil {
		q.armed = on
	}
}

// send sends ms, all of them unless one fails; it returns how many went
// and the failure. A full send buffer (rare: UDP) is waited out, until
// stopWaiting.
func (q *quietFD) send(ms []mmsghdr) (int, error) {
	done := 0
	for done < len(ms) {
		q.mu.RLock()
		n, errno := sendmmsg(q.fd, ms[done:])
		q.mu.RUnlock()
		switch {
		case errno == unix.EAGAIN && !q.giveUp.Load():
			q.waitWritable()
		case errno != 0:
			return done, os.NewSyscallError("sendmmsg", errno)
		default:
			done += n
		}
	}
	return done, nil
}

// writableWait bounds one wait for room in the send buffer.
const writableWait = 10 * time.Millisecond

// waitWritable waits, blocking its thread, until the socket takes output
// or writableWait has passed.
func (q *quietFD) waitWritable() {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.fd < 0 {
		return
	}
	fds := []unix.PollFd{{Fd: int32(q.fd), Events: unix.POLLOUT}} //nolint:gosec // G115: a descriptor
	_, _ = unix.Poll(fds, int(writableWait/time.Millisecond))
}

// stopWaiting makes send fail at a full send buffer rather than wait.
func (q *quietFD) stopWaiting() { q.giveUp.Store(true) }

// setReadDeadline bounds recv; a deadline that has passed wakes a recv
// that waits.
func (q *quietFD) setReadDeadline(t time.Time) error { return q.ep.SetReadDeadline(t) }

// close ends a waiting recv and closes the socket; later sends and
// receives fail.
func (q *quietFD) close() error {
	q.giveUp.Store(true)
	err := q.ep.Close()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fd < 0 {
		return err
	}
	err = errors.Join(err, unix.Close(q.fd))
	q.fd = -1
	return err
}

// recvmmsg and sendmmsg are raw system calls: the socket is non-blocking.
// On a closed quietFD (fd -1) they fail with EBADF.
func recvmmsg(fd int, ms []mmsghdr) (int, syscall.Errno) {
	if fd < 0 {
		return 0, unix.EBADF
	}
	n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&ms[0])), uintptr(len(ms)),
		unix.MSG_DONTWAIT, 0, 0)
	return int(n), e
}

func sendmmsg(fd int, ms []mmsghdr) (int, syscall.Errno) {
	if fd < 0 {
		return 0, unix.EBADF
	}
	n, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&ms[0])), uintptr(len(ms)),
		unix.MSG_DONTWAIT, 0, 0)
	return int(n), e
}

// sockaddr is room for an IPv4 or IPv6 socket address.
type sockaddr = unix.RawSockaddrInet6

// putAddr writes ap into sa for a socket of family v6 and returns its
// length.
func putAddr(sa *sockaddr, ap netip.AddrPort, v6 bool) uint32 {
	if !v6 {
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*s4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().Unmap().As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&s4.Port))[:], ap.Port())
		return unix.SizeofSockaddrInet4
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
	return unix.SizeofSockaddrInet6
}

// getAddr reads the address recvmmsg wrote into sa (n bytes).
func getAddr(sa *sockaddr, n uint32) netip.AddrPort {
	switch {
	case n >= unix.SizeofSockaddrInet4 && sa.Family == unix.AF_INET:
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&s4.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(s4.Addr), port)
	case n >= unix.SizeofSockaddrInet6 && sa.Family == unix.AF_INET6:
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
	}
	return netip.AddrPort{}
}

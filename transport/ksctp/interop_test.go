package ksctp

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/pion/logging"
	"github.com/pion/sctp"
	"golang.org/x/sys/unix"
)

const (
	interopKernelUDP    = 9899 // net.sctp.udp_port, set by vm/run-tests.sh
	interopSCTPPort     = 5000 // pion's hard-coded SCTP source and destination port
	interopPathMTU      = 1200 // fits pion's 8192-byte UDP read buffer
	interopBigMsg       = 100 << 10
	interopMsgsPerStrm  = 2
	interopPionMaxMsgSz = 256 << 10
)

// setPathMTU pins the socket's default path MTU (inherited by accepted
// associations) and turns path MTU discovery off. Loopback's 64 KiB MTU
// would otherwise let the kernel send UDP datagrams pion cannot read whole.
func setPathMTU(fd int, mtu uint32) error {
	var b [sizeofPaddrParams]byte
	*(*uint32)(unsafe.Pointer(&b[paddrPathMTUOff])) = mtu
	*(*uint32)(unsafe.Pointer(&b[paddrFlagsOff])) = sppPMTUDDisable
	return unix.SetsockoptString(fd, solSCTP, sctpPeerAddrParams, string(b[:]))
}

// TestInteropPion checks that the kernel's SCTP talks to pion/sctp over
// SCTP-over-UDP (RFC 6951): pion dials the kernel's encapsulation port, the
// kernel accepts on a one-to-one socket and echoes messages on three streams.
func TestInteropPion(t *testing.T) {
	if !Available() {
		t.Skip("kernel has no SCTP; run `make vm-test`")
	}
	cfg := Config{Streams: 8}
	lfd, err := newSocket(unix.AF_INET, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := setPathMTU(lfd, interopPathMTU); err != nil {
		t.Fatalf("SCTP_PEER_ADDR_PARAMS: %v", err)
	}
	if err := unix.SetsockoptInt(lfd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Port: interopSCTPPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 1); err != nil {
		t.Fatal(err)
	}
	ln, _ := newConn(lfd, "l")
	defer ln.f.Close()
	ln.f.SetDeadline(time.Now().Add(60 * time.Second))

	type accepted struct {
		fd  int
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		var fd int
		var aerr error
		err := ln.rc.Read(func(lfd uintptr) bool {
			fd, _, aerr = unix.Accept4(int(lfd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			return aerr != unix.EAGAIN
		})
		if err == nil {
			err = aerr
		}
		acc <- accepted{fd, err}
	}()

	udp, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: interopKernelUDP})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	type dialed struct {
		a   *sctp.Association
		err error
	}
	dial := make(chan dialed, 1)
	go func() {
		a, err := sctp.ClientWithOptions(
			sctp.WithNetConn(udp),
			sctp.WithLoggerFactory(logging.NewDefaultLoggerFactory()),
			sctp.WithMaxMessageSize(interopPionMaxMsgSz),
		)
		dial <- dialed{a, err}
	}()

	var ac accepted
	select {
	case ac = <-acc:
	case <-time.After(90 * time.Second):
		t.Fatal("kernel accept: timeout")
	}
	if ac.err != nil {
		t.Fatalf("kernel accept: %v", ac.err)
	}
	var dd dialed
	select {
	case dd = <-dial:
	case <-time.After(90 * time.Second):
		t.Fatal("pion Client: timeout")
	}
	if dd.err != nil {
		t.Fatalf("pion Client: %v", dd.err)
	}
	assoc := dd.a
	defer assoc.Abort("test done")
	setOptions(ac.fd, &cfg)
	k, _ := newConn(ac.fd, "a")
	defer k.f.Close()
	if in, out, err := sctpStreams(ac.fd); err == nil {
		t.Logf("association up over UDP encapsulation; kernel streams in=%d out=%d", in, out)
	}

	// What pion sends: per stream a small message, and on stream 2 a big one.
	msgs := map[uint16][][]byte{}
	total := 0
	for sid := uint16(1); sid <= 3; sid++ {
		for i := 0; i < interopMsgsPerStrm; i++ {
			m := []byte(fmt.Sprintf("stream %d message %d", sid, i))
			if sid == 2 && i == 1 {
				m = bytes.Repeat([]byte(fmt.Sprintf("big%d", sid)), interopBigMsg/4)
			}
			msgs[sid] = append(msgs[sid], m)
			total++
		}
	}

	// The kernel echoes each message on the stream it came in on.
	echoErr := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		k.f.SetReadDeadline(time.Now().Add(120 * time.Second))
		buf, oob := make([]byte, 1<<20), make([]byte, 256)
		partial := map[uint16][]byte{}
		for n := 0; n < total; {
			pc, err := k.readPiece(buf, oob)
			if err != nil {
				echoErr <- fmt.Errorf("kernel recv: %w", err)
				return
			}
			if pc.notif {
				continue
			}
			if !pc.hasRI {
				echoErr <- fmt.Errorf("kernel recv: no SCTP_RCVINFO")
				return
			}
			sid := pc.info.SID
			if sid < 1 || sid > 3 || pc.info.PPID != uint32(sctp.PayloadTypeWebRTCBinary) {
				echoErr <- fmt.Errorf("kernel recv: rcvinfo %+v, want stream 1..3 ppid 53", pc.info)
				return
			}
			partial[sid] = append(partial[sid], buf[:pc.n]...)
			if !pc.eor {
				continue
			}
			m := partial[sid]
			delete(partial, sid)
			if err := k.writeMsg(ctx, sid, uint32(sctp.PayloadTypeWebRTCBinary), 0, m); err != nil {
				echoErr <- fmt.Errorf("kernel send on stream %d: %w", sid, err)
				return
			}
			n++
		}
		echoErr <- nil
	}()

	streams := map[uint16]*sctp.Stream{}
	for sid := uint16(1); sid <= 3; sid++ {
		s, err := assoc.OpenStream(sid, sctp.PayloadTypeWebRTCBinary)
		if err != nil {
			t.Fatalf("pion OpenStream %d: %v", sid, err)
		}
		streams[sid] = s
	}
	for sid := uint16(1); sid <= 3; sid++ {
		for _, m := range msgs[sid] {
			if _, err := streams[sid].Write(m); err != nil {
				t.Fatalf("pion write %d bytes on stream %d: %v", len(m), sid, err)
			}
		}
	}
	rbuf := make([]byte, interopPionMaxMsgSz)
	for sid := uint16(1); sid <= 3; sid++ {
		s := streams[sid]
		s.SetReadDeadline(time.Now().Add(120 * time.Second))
		for i, want := range msgs[sid] {
			n, ppi, err := s.ReadSCTP(rbuf)
			if err != nil {
				select {
				case e := <-echoErr:
					t.Fatalf("pion read stream %d msg %d: %v (kernel side: %v)", sid, i, err, e)
				default:
				}
				t.Fatalf("pion read stream %d msg %d: %v", sid, i, err)
			}
			if ppi != sctp.PayloadTypeWebRTCBinary || !bytes.Equal(rbuf[:n], want) {
				t.Fatalf("pion read stream %d msg %d: %d bytes ppi %v, want %d bytes ppi 53", sid, i, n, ppi, len(want))
			}
		}
	}
	if err := <-echoErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("echoed %d messages (largest %d bytes) on streams 1..3 between pion/sctp and the kernel", total, interopBigMsg)
}

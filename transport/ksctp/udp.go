package ksctp

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SCTP over UDP (RFC 6951). Linux receives encapsulated SCTP on one UDP
// port per network namespace, the sysctl net.sctp.udp_port (0, the
// default, turns it off), and sends it from that port. A socket reaches a
// peer over UDP when told the peer's UDP port (SCTP_REMOTE_UDP_ENCAPS_PORT);
// an association accepted from an encapsulated INIT answers the same way
// by itself.
//
// braid's convention, shared with the userspace stack (transport/sctp):
// an address host:port means UDP port `port` carrying SCTP port `port`.
// A dialer in UDP mode therefore sends to UDP port p with SCTP destination
// port p, and a kernel-stack listener is reachable over UDP exactly when it
// listens on SCTP port net.sctp.udp_port: host:udp_port then serves native
// SCTP and SCTP over UDP alike.

// UDPPort returns the UDP port on which this network namespace's kernel
// receives SCTP over UDP (net.sctp.udp_port), or 0 if it does not.
func UDPPort() int {
	b, err := os.ReadFile("/proc/sys/net/sctp/udp_port")
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return p
}

// maxUDPPathMTU caps the path MTU of an encapsulated association: the
// userspace stack (pion/sctp) reads at most 8192 bytes per datagram, and
// loopback's 64 KiB MTU would let the kernel send bigger ones.
const maxUDPPathMTU = 8192

// Layout of struct sctp_paddrparams (linux/sctp.h, packed, aligned(4)).
const (
	sctpPeerAddrParams = 9      // SCTP_PEER_ADDR_PARAMS
	sppPMTUDDisable    = 1 << 4 // SPP_PMTUD_DISABLE
	sizeofPaddrParams  = 156
	paddrPathMTUOff    = 4 + 128 + 4 + 2
	paddrFlagsOff      = paddrPathMTUOff + 4 + 4
)

// capPathMTU pins the association's path MTU at maxUDPPathMTU, with path
// MTU discovery off, if it is larger (or unknown).
func capPathMTU(fd int) error {
	var b [sizeofPaddrParams]byte
	if err := getsockoptBytes(fd, sctpPeerAddrParams, b[:]); err == nil {
		if mtu := binary.NativeEndian.Uint32(b[paddrPathMTUOff:]); mtu != 0 && mtu <= maxUDPPathMTU {
			return nil
		}
	}
	b = [sizeofPaddrParams]byte{}
	binary.NativeEndian.PutUint32(b[paddrPathMTUOff:], maxUDPPathMTU)
	binary.NativeEndian.PutUint32(b[paddrFlagsOff:], sppPMTUDDisable)
	if err := unix.SetsockoptString(fd, solSCTP, sctpPeerAddrParams, string(b[:])); err != nil {
		return fmt.Errorf("ksctp: SCTP_PEER_ADDR_PARAMS: %w", err)
	}
	return nil
}

// encapsulated reports whether the socket's association reaches its peer
// over UDP: the peer's transport has a UDP encapsulation port.
func encapsulated(fd int) bool {
	ra, err := unix.Getpeername(fd)
	if err != nil {
		return false
	}
	b := udpEncaps(0)
	putSockaddr(b[udpEncapsAddrOff:], ra)
	if getsockoptBytes(fd, sctpRemoteUDPEncapsPort, b) != nil {
		return false
	}
	return binary.BigEndian.Uint16(b[udpEncapsPortOff:]) != 0
}

// putSockaddr writes sa as a struct sockaddr_in or sockaddr_in6 into b.
func putSockaddr(b []byte, sa unix.Sockaddr) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], uint16(sa.Port))
		copy(b[4:], sa.Addr[:])
	case *unix.SockaddrInet6:
		binary.NativeEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], uint16(sa.Port))
		copy(b[8:], sa.Addr[:])
	}
}

// getsockoptBytes reads an SCTP socket option into b, which also carries
// the request (association id, address).
func getsockoptBytes(fd, opt int, b []byte) error {
	l := uint32(len(b))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), solSCTP, uintptr(opt),
		uintptr(unsafe.Pointer(&b[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

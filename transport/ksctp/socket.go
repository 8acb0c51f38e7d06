package ksctp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// Addr is an SCTP transport address.
type Addr struct{ netip.AddrPort }

// Network returns "sctp".
func (Addr) Network() string { return "sctp" }

func sockaddr(ap netip.AddrPort) (unix.Sockaddr, int) {
	if ap.Addr().Is4() || ap.Addr().Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}, unix.AF_INET
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, unix.AF_INET6
}

func addrOf(sa unix.Sockaddr) Addr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return Addr{netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))}
	case *unix.SockaddrInet6:
		return Addr{netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))}
	}
	return Addr{}
}

// resolve turns "host:port" into an address; an empty host means the
// IPv6 wildcard (dual stack).
func resolve(ctx context.Context, addr string) (netip.AddrPort, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("ksctp: bad port in %q", addr)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(port)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("ksctp: resolve %q: %v", host, err)
	}
	ip := ips[0]
	for _, x := range ips {
		if x.Is4() {
			ip = x
			break
		}
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
}

// newSocket opens a nonblocking one-to-one SCTP socket set up for braid.
func newSocket(family int, cfg *Config) (int, error) {
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
	if err != nil {
		return -1, fmt.Errorf("ksctp: socket: %w", err)
	}
	if err := setOptions(fd, cfg); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// setOptions applies braid's socket options. The stream counts must be set
// before the association is set up; the rest is re-applied to accepted
// sockets.
func setOptions(fd int, cfg *Config) error {
	n := uint16(cfg.streams() + 1) // and the control stream
	im := initMsg{NumOstreams: n, MaxInstreams: n}
	if err := setsockoptStruct(fd, solSCTP, sctpInitMsg, &im); err != nil {
		return fmt.Errorf("ksctp: SCTP_INITMSG: %w", err)
	}
	if err := unix.SetsockoptInt(fd, solSCTP, sctpRecvRcvInfo, 1); err != nil {
		return fmt.Errorf("ksctp: SCTP_RECVRCVINFO: %w", err)
	}
	// Association changes tell the side that initiated a shutdown when it
	// has completed (recvmsg never returns EOF there).
	if err := setsockoptStruct(fd, solSCTP, sctpEventOpt, &event{Type: snAssocChange, On: 1}); err != nil {
		return fmt.Errorf("ksctp: SCTP_EVENT: %w", err)
	}
	// Level 2: pieces of messages from different streams may interleave on
	// receive (we demultiplex by SCTP_RCVINFO). Linux stores it as a bool.
	_ = unix.SetsockoptInt(fd, solSCTP, sctpFragmentInterleave, 2)
	// I-DATA (RFC 8260) lets the sender interleave big messages too; Linux
	// allows it only with net.sctp.intl_enable=1, so failure is fine.
	_ = setsockoptStruct(fd, solSCTP, sctpInterleavingSupport, &assocValue{Value: 1})
	_ = unix.SetsockoptInt(fd, solSCTP, sctpNoDelay, 1)
	if cfg.PartialDeliveryPoint > 0 {
		_ = unix.SetsockoptInt(fd, solSCTP, sctpPartialDeliveryPt, cfg.PartialDeliveryPoint)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	return nil
}

// fragSize picks the fragment size for a socket: at most sendFragment and
// at most a quarter of the send buffer, since the kernel takes a message
// only when it fits whole.
func fragSize(fd int) int {
	sb, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if err != nil || sb <= 0 {
		return 16 << 10
	}
	return max(min(sendFragment, sb/4), 4<<10)
}

// setEncapsPort makes the socket's future association send SCTP over UDP
// to the peer's UDP port (RFC 6951); zero leaves it alone.
func setEncapsPort(fd, port int) error {
	if port == 0 {
		return nil
	}
	if port < 0 || port > 0xffff {
		return fmt.Errorf("ksctp: UDPEncapsPort %d out of range", port)
	}
	b := udpEncaps(uint16(port))
	if err := unix.SetsockoptString(fd, solSCTP, sctpRemoteUDPEncapsPort, string(b)); err != nil {
		return fmt.Errorf("ksctp: SCTP_REMOTE_UDP_ENCAPS_PORT: %w", err)
	}
	return nil
}

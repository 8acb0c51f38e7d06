package ksctp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/internal/sctpwire"
)

// FragmentSize is the largest fragment payload the transport accepts
// (sctpwire.MaxFragment); braid messages are sent in SCTP messages of at
// most sendFragment bytes, header included, which fit one DATA chunk on
// loopback (MTU 64 KiB), so the kernel rarely needs partial delivery.
const (
	FragmentSize = sctpwire.MaxFragment
	sendFragment = 60 << 10
)

// Config configures the kernel SCTP transport. The zero value is ready.
type Config struct {
	// Streams is the braid stream count offered: SCTP_INITMSG asks for one
	// more SCTP stream (outbound and maximum inbound), the control stream.
	// The handshake never negotiates more streams than the association
	// got. Zero means transport.MaxStreams.
	Streams int
	// HandshakeTimeout bounds a listener's handshake. Zero means 10 s.
	HandshakeTimeout time.Duration
	// CloseTimeout bounds how long Close waits for the SCTP shutdown to
	// finish before it closes the socket anyway. Zero means 10 s.
	CloseTimeout time.Duration
	// PartialDeliveryPoint, if positive, sets SCTP_PARTIAL_DELIVERY_POINT:
	// the kernel hands over pieces of any message larger than it.
	PartialDeliveryPoint int
	// UDPEncapsPort, if non-zero, makes associations this transport dials
	// travel in UDP datagrams to this UDP port of the peer (SCTP over UDP,
	// RFC 6951, SCTP_REMOTE_UDP_ENCAPS_PORT) instead of as IP protocol
	// 132, for paths that carry only TCP and UDP (or a UDP relay). The
	// local kernel must receive encapsulated SCTP (sysctl
	// net.sctp.udp_port); a listening kernel answers each encapsulated
	// peer the same way without being told.
	UDPEncapsPort int
	// UDP makes Dial reach the peer over SCTP over UDP: the datagrams go
	// to the UDP port of the address dialed, which is also the SCTP
	// destination port (udp.go). That is how the userspace stack
	// (transport/sctp) listens, and how a kernel-stack listener on port
	// net.sctp.udp_port is reached over UDP. The local kernel must receive
	// encapsulated SCTP (UDPPort() != 0). UDPEncapsPort, if set, overrides
	// the UDP port.
	UDP bool
	// UDPFallback makes a native Dial that brings up no association
	// (ErrNoAssociation: refused, unreachable, ConnectTimeout) try again
	// over UDP as with UDP, if the local kernel receives SCTP over UDP.
	// It lets a kernel-stack dialer reach userspace-stack listeners.
	UDPFallback bool
	// ConnectTimeout, if positive, bounds Dial's SCTP association setup
	// (INIT to COOKIE-ACK, before the braid handshake); a Dial that runs
	// out of it fails with ErrNoAssociation. Zero leaves it to ctx.
	ConnectTimeout time.Duration
	// TLS is the cluster's data-plane encryption policy. The kernel's SCTP
	// has no DTLS, so this transport encrypts nothing: Dial refuses a
	// peer the mode says to encrypt for (between hosts, under the
	// default), and a listener refuses a peer it would take only DTLS
	// from; the userspace stack (transport/sctp) serves those.
	TLS transport.TLSMode
}

func (c *Config) streams() int {
	if c.Streams <= 0 || c.Streams > transport.MaxStreams {
		return transport.MaxStreams
	}
	return c.Streams
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Transport is the kernel SCTP transport.
type Transport struct{ cfg Config }

var (
	_ transport.Transport = (*Transport)(nil)
	_ transport.Describer = (*Transport)(nil)
)

// ErrUnavailable is returned when the kernel has no SCTP.
var ErrUnavailable = errors.New("ksctp: kernel has no SCTP")

// ErrNoAssociation wraps Dial's errors from before the braid handshake: no
// SCTP association came up with the peer (refused, unreachable, no SCTP
// there, or Config.ConnectTimeout ran out). Nothing braid-level was
// exchanged, so another path may be tried.
var ErrNoAssociation = errors.New("ksctp: no SCTP association")

// Available reports whether the running kernel supports SCTP sockets. It
// probes once.
var Available = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_SCTP)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

// New returns a kernel SCTP transport.
func New(cfg Config) *Transport { return &Transport{cfg: cfg} }

// Name returns "sctp".
func (t *Transport) Name() string { return "sctp" }

// Capabilities reports independent streams.
func (t *Transport) Capabilities() transport.Capabilities {
	return transport.Capabilities{IndependentStreams: true}
}

// Dial connects to addr and runs the dialer's handshake on the control
// stream. With Config.UDPFallback, a native attempt that brings up no
// association is followed by one over UDP.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	ap, err := resolve(ctx, addr)
	if err != nil {
		return nil, err
	}
	if t.cfg.TLS.Dial(net.UDPAddrFromAddrPort(ap)) {
		return nil, fmt.Errorf("%w: ksctp: kernel SCTP cannot encrypt, and data-plane TLS is %s for %s "+
			"(use the userspace stack, --sctp-stack user or auto, or --data-plane-tls=off on a trusted network)",
			transport.ErrAuth, t.cfg.TLS, addr)
	}
	encaps := t.encapsPort(ap.Port())
	a, err := t.dial(ctx, addr, ap, encaps, cfg)
	if err != nil && encaps == 0 && t.cfg.UDPFallback && UDPPort() != 0 &&
		errors.Is(err, ErrNoAssociation) && ctx.Err() == nil {
		a, err = t.dial(ctx, addr, ap, int(ap.Port()), cfg)
	}
	return a, err
}

// dial makes one attempt, over UDP to port encaps if it is not 0.
func (t *Transport) dial(ctx context.Context, addr string, ap netip.AddrPort, encaps int, cfg transport.DialConfig) (transport.Association, error) {
	sa, family := sockaddr(ap)
	fd, err := newSocket(family, &t.cfg)
	if err != nil {
		return nil, err
	}
	if err := setEncapsPort(fd, encaps); err != nil {
		unix.Close(fd)
		return nil, err
	}
	c, err := newConn(fd, "sctp:"+addr)
	if err != nil {
		return nil, err
	}
	undo := c.deadlineFor(ctx)
	hc := &hsConn{c: c}
	res, err := t.dialOn(c, hc, sa, encaps != 0, ctx, cfg)
	undo()
	if err != nil {
		c.f.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ksctp: dial %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("ksctp: dial %s: %w", addr, err)
	}
	return newAssoc(c, res, hc.early, func() {}, &t.cfg), nil
}

// encapsPort is the peer's UDP port to dial over SCTP over UDP, or 0 for
// native SCTP.
func (t *Transport) encapsPort(port uint16) int {
	switch {
	case t.cfg.UDPEncapsPort != 0:
		return t.cfg.UDPEncapsPort
	case t.cfg.UDP:
		return int(port)
	}
	return 0
}

func (t *Transport) dialOn(c *conn, hc *hsConn, sa unix.Sockaddr, udp bool, ctx context.Context, cfg transport.DialConfig) (transport.HandshakeResult, error) {
	if err := t.connect(ctx, c, sa, udp); err != nil {
		return transport.HandshakeResult{}, err
	}
	if udp {
		if err := c.control(capPathMTU); err != nil {
			return transport.HandshakeResult{}, err
		}
	}
	n, err := assocStreams(c)
	if err != nil {
		return transport.HandshakeResult{}, err
	}
	cfg.MaxStreams = capStreams(cfg.MaxStreams, n)
	return transport.DialHandshake(ctx, hc, cfg)
}

// connect sets the association up within Config.ConnectTimeout; its
// failures wrap ErrNoAssociation.
func (t *Transport) connect(ctx context.Context, c *conn, sa unix.Sockaddr, udp bool) error {
	if udp && UDPPort() == 0 {
		return fmt.Errorf("%w: SCTP over UDP needs the local kernel to receive it (sysctl net.sctp.udp_port is 0)", ErrNoAssociation)
	}
	if t.cfg.ConnectTimeout > 0 {
		cctx, cancel := context.WithTimeout(ctx, t.cfg.ConnectTimeout)
		defer cancel()
		undo := c.deadlineFor(cctx)
		defer undo()
		ctx = cctx
	}
	err := connect(c, sa)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil && t.cfg.ConnectTimeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer within %v", ErrNoAssociation, t.cfg.ConnectTimeout)
	case ctx.Err() != nil:
		return err
	}
	return fmt.Errorf("%w: %w", ErrNoAssociation, err)
}

// connect runs a nonblocking connect and waits for it on the poller.
func connect(c *conn, sa unix.Sockaddr) error {
	var cerr error
	err := c.rc.Write(func(fd uintptr) bool {
		if cerr == unix.EINPROGRESS || cerr == unix.EALREADY {
			var e int
			e, cerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_ERROR)
			if cerr == nil && e != 0 {
				cerr = unix.Errno(e)
			}
			return true
		}
		cerr = unix.Connect(int(fd), sa)
		return cerr != unix.EINPROGRESS && cerr != unix.EALREADY
	})
	if err == nil {
		err = cerr
	}
	return mapErr(err)
}

// assocStreams is the number of logical streams the association can carry:
// the SCTP streams usable both ways less the control stream.
func assocStreams(c *conn) (int, error) {
	var in, out int
	err := c.control(func(fd int) (err error) {
		in, out, err = sctpStreams(fd)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ksctp: SCTP_STATUS: %w", err)
	}
	if n := min(in, out) - 1; n >= 1 {
		return n, nil
	}
	return 0, fmt.Errorf("%w: the peer allows %d inbound and %d outbound SCTP streams, braid needs 2", transport.ErrProtocol, in, out)
}

// capStreams limits a handshake offer to the SCTP streams we got.
func capStreams(offer, n int) int {
	if offer <= 0 || offer > transport.MaxStreams {
		offer = transport.MaxStreams
	}
	return min(offer, n)
}

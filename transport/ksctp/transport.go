package ksctp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/braidhq/braid/transport"
)

// FragmentSize is the largest SCTP message the transport accepts; braid
// messages are sent in fragments of at most sendFragment bytes, which fit
// one DATA chunk on loopback (MTU 64 KiB), so the kernel rarely needs
// partial delivery.
const (
	FragmentSize = 64 << 10
	sendFragment = 60 << 10
)

// Config configures the kernel SCTP transport. The zero value is ready.
type Config struct {
	// Streams is the SCTP stream count offered in SCTP_INITMSG (outbound
	// and maximum inbound). The handshake never negotiates more streams
	// than the association got. Zero means transport.MaxStreams.
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

// Dial connects to addr and runs the dialer's handshake on stream 0.
func (t *Transport) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	ap, err := resolve(ctx, addr)
	if err != nil {
		return nil, err
	}
	sa, family := sockaddr(ap)
	fd, err := newSocket(family, &t.cfg)
	if err != nil {
		return nil, err
	}
	if err := setEncapsPort(fd, t.cfg.UDPEncapsPort); err != nil {
		unix.Close(fd)
		return nil, err
	}
	c, err := newConn(fd, "sctp:"+addr)
	if err != nil {
		return nil, err
	}
	undo := c.deadlineFor(ctx)
	res, err := t.dialOn(c, sa, ctx, cfg)
	undo()
	if err != nil {
		c.f.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ksctp: dial %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("ksctp: dial %s: %w", addr, err)
	}
	return newAssoc(c, res, func() {}, &t.cfg), nil
}

func (t *Transport) dialOn(c *conn, sa unix.Sockaddr, ctx context.Context, cfg transport.DialConfig) (transport.HandshakeResult, error) {
	if err := connect(c, sa); err != nil {
		return transport.HandshakeResult{}, err
	}
	n, err := assocStreams(c)
	if err != nil {
		return transport.HandshakeResult{}, err
	}
	cfg.MaxStreams = capStreams(cfg.MaxStreams, n)
	return transport.DialHandshake(ctx, hsConn{c}, cfg)
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

// assocStreams is the number of SCTP streams usable both ways.
func assocStreams(c *conn) (int, error) {
	var in, out int
	err := c.control(func(fd int) (err error) {
		in, out, err = sctpStreams(fd)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ksctp: SCTP_STATUS: %w", err)
	}
	return max(min(in, out), 1), nil
}

// capStreams limits a handshake offer to the SCTP streams we got.
func capStreams(offer, n int) int {
	if offer <= 0 || offer > transport.MaxStreams {
		offer = transport.MaxStreams
	}
	return min(offer, n)
}

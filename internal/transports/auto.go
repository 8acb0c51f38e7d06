package transports

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ksctp"
	"github.com/braidhq/braid/transport/sctp"
)

// autoSCTP is "sctp" under --sctp-stack auto on a host whose kernel has
// SCTP. Both stacks frame braid messages alike (transport/internal/sctpwire),
// so it mixes them per association, and a cluster whose hosts chose
// differently still connects under the defaults, with no sysctl:
//
//   - Listen listens on UDP port P with the userspace stack, for peers
//     without kernel SCTP, and on SCTP port P with the kernel, for peers
//     with it. (If P is the kernel's own SCTP-over-UDP port,
//     net.sctp.udp_port, the kernel serves both alone.)
//   - Dial tries the kernel's native SCTP first; when no association comes
//     up (the peer's kernel refuses or has no SCTP, or nothing answers
//     within connectTimeout) it dials again with the userspace stack.
//
// Two kernel-SCTP hosts thus talk natively, and anything else meets over
// UDP through pion/sctp. Where data-plane TLS applies (between hosts,
// under the default), the kernel, which has no DTLS, is skipped: Dial uses
// the userspace stack over DTLS at once, and the kernel listener refuses
// such peers, which reach the UDP one.
type autoSCTP struct {
	kernel *ksctp.Transport
	user   *sctp.Transport
	tls    transport.TLSMode
	log    *slog.Logger
}

// connectTimeout bounds auto's native SCTP attempt: an INIT-ACK takes one
// round trip, and a path that drops SCTP never answers.
const connectTimeout = 2 * time.Second

var (
	_ transport.Transport = (*autoSCTP)(nil)
	_ transport.Describer = (*autoSCTP)(nil)
)

func newAutoSCTP(opts Options) *autoSCTP {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &autoSCTP{
		kernel: ksctp.New(ksctp.Config{ConnectTimeout: connectTimeout, TLS: opts.DataPlaneTLS}),
		user:   sctp.New(userSCTPConfig(opts)),
		tls:    opts.DataPlaneTLS,
		log:    log,
	}
}

// Name returns "sctp".
func (*autoSCTP) Name() string { return "sctp" }

// Capabilities reports independent streams, which both stacks have.
func (*autoSCTP) Capabilities() transport.Capabilities {
	return transport.Capabilities{IndependentStreams: true}
}

// Dial tries kernel SCTP, then userspace SCTP over UDP; only the latter
// when the association is to be encrypted.
func (t *autoSCTP) Dial(ctx context.Context, addr string, cfg transport.DialConfig) (transport.Association, error) {
	if ua, err := net.ResolveUDPAddr("udp", addr); err == nil && t.tls.Dial(ua) {
		return t.user.Dial(ctx, addr, cfg)
	}
	a, err := t.kernel.Dial(ctx, addr, cfg)
	if err == nil || !errors.Is(err, ksctp.ErrNoAssociation) || ctx.Err() != nil {
		return a, err
	}
	t.log.Debug("sctp: no kernel SCTP association, dialing over UDP", "addr", addr, "err", err)
	return t.user.Dial(ctx, addr, cfg)
}

// Listen listens on UDP and kernel SCTP at one address. For port 0 it
// retries a few times should the port the UDP socket got be taken for SCTP.
func (t *autoSCTP) Listen(addr string, cfg transport.ListenConfig) (transport.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		ul, err := t.user.Listen(addr, cfg)
		if err != nil {
			if port != "0" && port == strconv.Itoa(ksctp.UDPPort()) {
				return t.kernel.Listen(addr, cfg) // the kernel holds the UDP port: it serves both
			}
			return nil, err
		}
		kl, err := t.kernel.Listen(ul.Addr().String(), cfg)
		if err == nil {
			return newDualListener(ul, kl), nil
		}
		ul.Close()
		if port != "0" || attempt == 3 {
			return nil, err
		}
	}
}

// dualListener accepts from two listeners at one address. It owns a pump
// goroutine per listener; Close stops and waits for both. If either
// listener fails, Accept returns its error from then on rather than
// serving one stack's peers only.
type dualListener struct {
	ls     [2]transport.Listener
	ready  chan transport.Association
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	failOnce sync.Once
	failed   chan struct{} // closed once err is set
	err      error
}

func newDualListener(a, b transport.Listener) *dualListener {
	d := &dualListener{ls: [2]transport.Listener{a, b}, ready: make(chan transport.Association), failed: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for _, l := range d.ls {
		d.wg.Go(func() { d.pump(l) })
	}
	return d
}

// pump hands l's associations to Accept until the listener closes.
func (d *dualListener) pump(l transport.Listener) {
	for {
		a, err := l.Accept(d.ctx)
		if err != nil {
			if d.ctx.Err() == nil {
				d.failOnce.Do(func() {
					d.err = fmt.Errorf("%s listener: %w", l.Addr().Network(), err)
					close(d.failed)
				})
			}
			return
		}
		select {
		case d.ready <- a:
		case <-d.ctx.Done():
			a.Abort(transport.ErrClosed)
			return
		}
	}
}

// Addr is the userspace listener's UDP address; the kernel listens on the
// same IP address and port for SCTP.
func (d *dualListener) Addr() net.Addr { return d.ls[0].Addr() }

// Accept returns the next association from either listener.
func (d *dualListener) Accept(ctx context.Context) (transport.Association, error) {
	select {
	case a := <-d.ready:
		return a, nil
	case <-d.failed:
		return nil, d.err
	case <-d.ctx.Done():
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes both listeners; accepted associations stay open.
func (d *dualListener) Close() error {
	d.once.Do(func() {
		d.cancel()
		for _, l := range d.ls {
			l.Close()
		}
		d.wg.Wait()
	})
	return nil
}

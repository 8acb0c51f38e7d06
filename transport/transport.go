// Package transport defines braid's data-plane contract: an association of N
// ordered, message-preserving streams between a server (the dialer) and a
// worker (the listener).
//
// Implementations live in child packages named after what they wrap
// (transport/tcp, transport/tcpn, transport/ptcp, transport/quic, and SCTP on
// the userspace stack, transport/sctp, or the kernel's, transport/ksctp) and
// every one of them runs the conformance suite in transport/transporttest.
//
// An association is opened in two steps. The transport connects, then both
// sides run the braid handshake (handshake.go) on the association's first
// channel: they authenticate each other with the cluster secret and negotiate
// the stream count as min(max(recA, recB), maxA, maxB). Only after the peer has
// proved it knows the secret does the listener call its Admit hook, which is
// where a worker admits the association (or refuses it, or lets it supersede
// an older one from the same peer); so an unauthenticated peer never holds
// any of its resources. The handshake also tells each
// side who the other is (PeerInfo: name, role identity and incarnation
// epoch) and negotiates the liveness bound.
//
// An open association is never trusted blindly: each transport keeps it
// alive with a cheap sign of life and ends it with an error wrapping both
// ErrPeerLost and ErrPeerClosed once the peer has been silent for the
// negotiated liveness (liveness.go), so that a peer killed with SIGKILL,
// frozen with SIGSTOP or cut off by the network frees the resources held
// for it on the other end.
package transport

import (
	"context"
	"errors"
	"net"
	"time"
)

// MaxMessageSize is the largest message a Stream must carry: 64 MiB of payload
// plus room for a unit's header.
const MaxMessageSize = 64<<20 + 64<<10

// MaxStreams bounds the stream count any side may offer.
const MaxStreams = 1024

// Errors shared by all transports. Implementations wrap them with %w so that
// callers can test with errors.Is.
var (
	// ErrClosed is returned by operations on an association that was closed
	// locally (Close or Abort).
	ErrClosed = errors.New("transport: association closed")
	// ErrPeerClosed is returned when the peer closed or aborted the
	// association, or the underlying connection was lost (including a peer
	// that went silent, which also wraps ErrPeerLost).
	ErrPeerClosed = errors.New("transport: association closed by peer")
	// ErrMessageTooLarge is returned by Send for a message over MaxMessageSize
	// and by a receiver that is told of one.
	ErrMessageTooLarge = errors.New("transport: message too large")
	// ErrProtocol means the peer sent something that is not valid for the
	// protocol; the association is aborted.
	ErrProtocol = errors.New("transport: protocol violation by peer")
	// ErrAuth means the handshake failed: the peers do not share a secret.
	ErrAuth = errors.New("transport: authentication failed")
	// ErrRefused means the listener refused the association after
	// authenticating it (for instance: no free processing threads).
	ErrRefused = errors.New("transport: association refused")
	// ErrBadStream is returned for a stream index outside [0, Streams()).
	ErrBadStream = errors.New("transport: no such stream")
)

// Transport opens and accepts associations. A Transport is safe for
// concurrent use.
type Transport interface {
	// Name is the transport's name on the command line ("tcp", "sctp", ...).
	Name() string
	// Dial opens an association to addr and runs the handshake as the
	// dialing side. It returns when the association is ready or ctx ends.
	Dial(ctx context.Context, addr string, cfg DialConfig) (Association, error)
	// Listen binds addr and returns a Listener whose Accept yields
	// handshaken associations.
	Listen(addr string, cfg ListenConfig) (Listener, error)
}

// Listener accepts associations. Close stops accepting; associations already
// returned by Accept stay open.
type Listener interface {
	// Accept returns the next association that passed the handshake and
	// its Admit hook. Peers that fail the handshake are dropped (and logged)
	// without being returned. Accept returns ErrClosed after Close.
	Accept(ctx context.Context) (Association, error)
	// Addr is the bound address, useful with port 0.
	Addr() net.Addr
	Close() error
}

// Association is a set of N ordered, message-preserving streams. It is safe
// for concurrent use: any number of goroutines may Send on any stream (each
// message is sent whole, never interleaved with another on the same stream),
// and one goroutine per stream may Recv.
//
// Streams are independent: a stream whose receiver has stopped reading must
// not stall the others (the multiplexed "tcp" transport cannot promise this
// and says so in its Capabilities).
type Association interface {
	// Streams is the negotiated stream count.
	Streams() int
	// Send sends p as one message on stream s. It blocks while the stream's
	// flow-control window is full, until ctx ends, or the association
	// closes. The caller may reuse p once Send returns.
	Send(ctx context.Context, s int, p []byte) error
	// Recv returns the next message on stream s. The returned slice is owned
	// by the caller.
	Recv(ctx context.Context, s int) ([]byte, error)
	// Close closes the association gracefully: messages already handed to
	// Send are delivered before the peer sees the close. Close is idempotent.
	Close() error
	// Abort tears the association down at once, telling the peer reason when
	// the protocol allows it. Pending and later calls fail.
	Abort(reason error)
	// Done is closed when the association has ended, by either side, or
	// because the peer was silent for the negotiated liveness.
	Done() <-chan struct{}
	// Err tells why the association ended; nil while it is open. A silent
	// peer ends it with a *PeerLostError (errors.Is ErrPeerLost and
	// ErrPeerClosed).
	Err() error
	// LocalAddr and RemoteAddr are the transport addresses of the two ends.
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	// Peer is what the handshake learned about the other side.
	Peer() PeerInfo
}

// PeerInfo is what each side tells the other in the handshake.
type PeerInfo struct {
	// Name is the peer's self-chosen name (a worker or server name), in
	// the form HandshakeName gives a long one.
	Name string
	// ID is a stable identity of the peer process's role, such as a
	// server's persistent id (at most MaxIDLen bytes, possibly empty).
	ID string
	// Epoch is the peer's incarnation number: a restarted process with the
	// same ID offers a higher one, so that its associations supersede
	// those of its previous incarnation.
	Epoch uint64
}

// MaxIDLen bounds PeerInfo.ID.
const MaxIDLen = 64

// Capabilities describes what a transport guarantees, so that the
// conformance suite can check the rest and state plainly what is expected to
// fail.
type Capabilities struct {
	// IndependentStreams is true when a stalled reader on one stream cannot
	// block delivery on the others.
	IndependentStreams bool
}

// Describer is implemented by transports that lack some guarantee.
type Describer interface {
	Capabilities() Capabilities
}

// DialConfig configures the dialing side (the server).
type DialConfig struct {
	// Secret is the cluster secret. It must be non-empty.
	Secret []byte
	// Name is sent to the peer in the handshake.
	Name string
	// RecStreams and MaxStreams are this side's recommended and maximum
	// stream counts. Zero RecStreams means 1; zero MaxStreams means
	// MaxStreams (the package constant).
	RecStreams, MaxStreams int
	// ID and Epoch are sent to the peer as PeerInfo.ID and .Epoch. An ID
	// longer than MaxIDLen makes Dial fail.
	ID    string
	Epoch uint64
	// Liveness is this side's offer for the liveness bound (see
	// NegotiateLiveness). Zero means DefaultLiveness.
	Liveness time.Duration
	// IdleFactor is this side's offer for the idle bound, in liveness
	// bounds (see DefaultIdleFactor); zero offers none. A transport that
	// implements idle pings sets it from its own Config before the
	// handshake; callers leave it zero.
	IdleFactor int
	// Routes are other hosts (addresses or names, no port) at which the
	// listener takes connections on the dialed port, one per further
	// network path. A transport that spreads an association over
	// several connections (ptcp) sends some through them; the others
	// ignore them.
	Routes []string
	// Logf, if set, receives one line for each thing a dial settled for
	// less than asked, such as a route it could not reach.
	Logf func(format string, args ...any)
}

// ListenConfig configures the listening side (the worker).
type ListenConfig struct {
	// Secret is the cluster secret. It must be non-empty.
	Secret []byte
	// Name is sent to the peer in the handshake.
	Name string
	// RecStreams and MaxStreams as in DialConfig.
	RecStreams, MaxStreams int
	// ID, Epoch, Liveness and IdleFactor as in DialConfig.
	ID         string
	Epoch      uint64
	Liveness   time.Duration
	IdleFactor int
	// Admit is called after the peer authenticated, with what it said
	// about itself (name, ID, epoch) and the negotiated stream count n. It returns how many streams to grant (1..n), and a release
	// func the transport calls exactly once when the association ends. An
	// error refuses the association (the dialer gets ErrRefused with its
	// text). A nil Admit grants n.
	Admit func(peer PeerInfo, n int) (granted int, release func(), err error)
	// Logf, if set, receives lines about refused or failed peers, with
	// the error among the arguments: a listener logs the first from each
	// source address in an interval (about 10 s) at once, and the others
	// of that interval as one line per source with their count, so that a
	// flood costs a line per source, not one per peer.
	Logf func(format string, args ...any)
	// Refused, if set, is called once for every peer a listener refused
	// or dropped before it authenticated, with the reason: the exact count
	// (metrics) that Logf's lines aggregate. It must not block.
	Refused func(peer net.Addr, err error)
}

// NegotiateStreams applies psock's rule: min(max(recA, recB), maxA, maxB),
// and at least 1.
func NegotiateStreams(recA, maxA, recB, maxB int) int {
	n := min(max(recA, recB), maxA, maxB)
	return max(n, 1)
}

// Package transports builds braid's data-plane transports by name, for the
// command line and the in-process cluster.
//
// The "sctp" transport has two stacks with one framing on the wire
// (transport/internal/sctpwire): the kernel's (transport/ksctp) and a
// userspace one over UDP (transport/sctp). --sctp-stack picks:
//
//   - user: the userspace stack, on every host.
//   - kernel: the kernel's SCTP natively; dialing falls back to SCTP over
//     UDP (RFC 6951) to reach userspace-stack listeners when the host's
//     net.sctp.udp_port is set, and a listener on that port is reachable
//     by UDP peers too (see transport/ksctp).
//   - auto (the default): the userspace stack on a host without kernel
//     SCTP; on a host with it, both (auto.go): listening on UDP and SCTP at
//     one address, dialing the kernel's SCTP first and UDP when no kernel
//     association comes up. A cluster whose hosts resolved auto
//     differently thus still connects, with no sysctl.
package transports

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/ksctp"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/quic"
	"github.com/braidhq/braid/transport/sctp"
	"github.com/braidhq/braid/transport/tcp"
	"github.com/braidhq/braid/transport/tcpn"
)

// Names lists the transports this binary has, default first.
var Names = []string{"sctp", "tcpn", "tcp", "quic", "ptcp"}

// Default is what workers and the demo use unless told otherwise.
const Default = "sctp"

// SCTP stacks.
const (
	StackAuto   = "auto"   // kernel SCTP between hosts that have it, userspace over UDP otherwise
	StackKernel = "kernel" // the kernel's SCTP (fails where the kernel has none)
	StackUser   = "user"   // userspace SCTP over UDP (pion/sctp)
)

// Options tune transports. The zero value means each one's defaults.
type Options struct {
	// SCTPStack picks the SCTP implementation: auto (default), kernel or
	// user.
	SCTPStack string
	// DataPlaneTLS says when associations are encrypted with keys bound to
	// the cluster secret: tcp and tcpn over TLS 1.3, sctp over DTLS (the
	// userspace stack; the kernel's refuses what it cannot encrypt). The
	// zero value means between hosts (transport.TLSMode). quic is always
	// encrypted.
	DataPlaneTLS transport.TLSMode
	// Logger receives transport logs (default: discard).
	Logger *slog.Logger
	// MPTCP runs tcp, tcpn and ptcp over Multipath TCP (Linux) where both
	// ends' kernels take it, plain TCP otherwise.
	MPTCP bool
	// TCPCC is the congestion control of tcp's, tcpn's and ptcp's
	// connections (Linux, per socket), e.g. "cubic" or "bbr"; empty: the
	// host's default.
	TCPCC string
	// SCTPCC is the userspace SCTP stack's congestion control
	// (sctp.Config.CC): auto (""), reno, cubic or bbr.
	SCTPCC string
	// SCTPFlows is how many reno flows each userspace SCTP association's
	// congestion control stands for (sctp.Config.Flows): 0 tunes it per
	// association.
	SCTPFlows int
	// SCTPUnpaced turns the userspace SCTP stack's pacing off
	// (sctp.Config.Unpaced).
	SCTPUnpaced bool
	// SCTPNoHyStart turns the userspace SCTP stack's HyStart++ off
	// (sctp.Config.NoHyStart).
	SCTPNoHyStart bool
	// IdleFactor is tcp's, tcpn's and ptcp's offer for the idle bound, in
	// liveness bounds (their Config.IdleFactor): 0 means
	// transport.DefaultIdleFactor, a negative value offers none.
	IdleFactor int
	// PTCP tunes ptcp's striping: its RecStripes, Driver and Routes are
	// used (TLS comes from DataPlaneTLS).
	PTCP ptcp.Config
}

// New builds the named transport.
func New(name string, opts Options) (transport.Transport, error) {
	switch name {
	case "sctp":
		return newSCTP(opts)
	case "tcp":
		return tcp.New(tcp.Config{TLS: opts.DataPlaneTLS, MPTCP: opts.MPTCP, CC: opts.TCPCC, IdleFactor: opts.IdleFactor}), nil
	case "tcpn":
		return tcpn.New(tcpn.Config{TLS: opts.DataPlaneTLS, MPTCP: opts.MPTCP, CC: opts.TCPCC, IdleFactor: opts.IdleFactor}), nil
	case "quic":
		return quic.New(quic.Config{}), nil
	case "ptcp":
		return ptcp.New(ptcp.Config{RecStripes: opts.PTCP.RecStripes, Driver: opts.PTCP.Driver, Routes: opts.PTCP.Routes, TLS: opts.DataPlaneTLS, MPTCP: opts.MPTCP,
			CC: opts.TCPCC, IdleFactor: opts.IdleFactor})
	}
	return nil, fmt.Errorf("unknown transport %q; available: %s", name, strings.Join(Names, ", "))
}

func newSCTP(opts Options) (transport.Transport, error) {
	switch opts.SCTPStack {
	case "", StackAuto:
		if ksctp.Available() {
			return newAutoSCTP(opts), nil
		}
		return sctp.New(userSCTPConfig(opts)), nil
	case StackKernel:
		if !ksctp.Available() {
			return nil, fmt.Errorf("--sctp-stack kernel: this kernel has no SCTP (socket(IPPROTO_SCTP) fails; try 'modprobe sctp' or --sctp-stack user)")
		}
		return ksctp.New(ksctp.Config{ConnectTimeout: connectTimeout, UDPFallback: true, TLS: opts.DataPlaneTLS}), nil
	case StackUser:
		return sctp.New(userSCTPConfig(opts)), nil
	}
	return nil, fmt.Errorf("--sctp-stack %q: want auto, kernel or user", opts.SCTPStack)
}

// userSCTPConfig is the userspace SCTP stack's configuration.
func userSCTPConfig(opts Options) sctp.Config {
	return sctp.Config{Logger: opts.Logger, TLS: opts.DataPlaneTLS, CC: opts.SCTPCC, Flows: opts.SCTPFlows,
		Unpaced: opts.SCTPUnpaced, NoHyStart: opts.SCTPNoHyStart}
}

// Stack reports which SCTP stack New("sctp", opts) uses: StackKernel for
// auto on a host with kernel SCTP, though auto reaches peers without it
// through the userspace stack.
func Stack(opts Options) string {
	if opts.SCTPStack == StackUser || (opts.SCTPStack != StackKernel && !ksctp.Available()) {
		return StackUser
	}
	return StackKernel
}

// All builds every transport, for a server that follows whatever its
// workers advertise.
func All(opts Options) (map[string]transport.Transport, error) {
	out := map[string]transport.Transport{}
	for _, name := range Names {
		t, err := New(name, opts)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

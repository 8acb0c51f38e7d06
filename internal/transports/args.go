package transports

import (
	"strconv"
	"strings"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/sctp"
)

// Args are the command-line flags of braid's server, worker and bench
// commands that give o, for a benchmark that starts braid processes:
// parsed by those commands, they make the Options o was (but for
// PTCP.Routes and Logger, which are not passed on).
func (o Options) Args() []string {
	return []string{"--sctp-stack", o.SCTPStack, "--data-plane-tls", o.DataPlaneTLS.String(),
		"--ptcp-stripes", countArg(o.PTCP.RecStripes), "--ptcp-driver", o.PTCP.Driver,
		"--sctp-flows", countArg(o.SCTPFlows), "--sctp-pacing", onOff(!o.SCTPUnpaced),
		"--sctp-hystart", onOff(!o.SCTPNoHyStart), "--mptcp=" + strconv.FormatBool(o.MPTCP),
		"--tcp-cc=" + o.TCPCC, "--sctp-cc", ccArg(o.SCTPCC), "--idle-factor=" + strconv.Itoa(o.IdleFactor)}
}

// ccArg is --sctp-cc for name ("": auto).
func ccArg(name string) string {
	if name == "" {
		return sctp.CCAuto
	}
	return name
}

// onOff is the value of an on/off flag: "on" for true.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// countArg is --sctp-flows or --ptcp-stripes for n (0: auto).
func countArg(n int) string {
	if n == 0 {
		return "auto"
	}
	return strconv.Itoa(n)
}

// SplitTLS reads a benchmark's transport name: NAME+tls is NAME with
// data-plane TLS on, loopback too, so that one run can compare the two.
func SplitTLS(name string, o Options) (string, Options) {
	if base, ok := strings.CutSuffix(name, "+tls"); ok {
		o.DataPlaneTLS = transport.TLSOn
		return base, o
	}
	return name, o
}

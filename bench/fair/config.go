package fair

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/sctp"
)

// ErrConfig is returned for an invalid Config or setting.
var ErrConfig = errors.New("fair: invalid config")

// Side is one setting of braid's association: a transport, its congestion
// control and, for sctp and ptcp, a count. Written "sctp" (the default:
// --sctp-cc auto), "sctp:bbr", "sctp:reno:16" (reno standing for 16
// flows), "tcpn:cubic" (--tcp-cc), "ptcp::8" (eight stripes).
type Side struct {
	Transport string
	// CC is --sctp-cc for sctp, --tcp-cc for tcp, tcpn and ptcp; empty:
	// sctp's auto, the TCP transports' the hosts' (the bed's cc=).
	CC string
	// Count is --sctp-flows (sctp) or --ptcp-stripes (ptcp); 0: auto.
	Count int
}

// ccName is what a kernel names a TCP congestion control.
var ccName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,15}$`)

// ParseSide reads a Side as String writes it.
func ParseSide(s string) (Side, error) {
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return Side{}, fmt.Errorf("%w: setting %q: want TRANSPORT[:CC[:COUNT]]", ErrConfig, s)
	}
	side := Side{Transport: parts[0]}
	if len(parts) > 1 {
		side.CC = parts[1]
	}
	if len(parts) > 2 {
		n, err := strconv.Atoi(parts[2])
		if err != nil || n < 1 {
			return side, fmt.Errorf("%w: setting %q: the count must be a positive number", ErrConfig, s)
		}
		side.Count = n
	}
	return side, side.check(s)
}

func (s Side) check(text string) error {
	most := 0
	switch s.Transport {
	case "sctp":
		most = sctp.MaxFlows
		if s.CC != "" && !slices.Contains(sctp.CCNames, s.CC) {
			return fmt.Errorf("%w: setting %q: sctp's congestion control is one of %s", ErrConfig, text, strings.Join(sctp.CCNames, ", "))
		}
	case "ptcp":
		most = ptcp.MaxStripes
		fallthrough
	case "tcp", "tcpn":
		if s.CC != "" && !ccName.MatchString(s.CC) {
			return fmt.Errorf("%w: setting %q: %q is no TCP congestion control name", ErrConfig, text, s.CC)
		}
	case "quic":
		if s.CC != "" {
			return fmt.Errorf("%w: setting %q: quic has no congestion control to choose", ErrConfig, text)
		}
	default:
		return fmt.Errorf("%w: setting %q: the transport is one of sctp, tcp, tcpn, ptcp, quic", ErrConfig, text)
	}
	if s.Count > 0 && s.Count > most {
		return fmt.Errorf("%w: setting %q: only sctp (flows, 1 to %d) and ptcp (stripes, 1 to %d) take a count",
			ErrConfig, text, sctp.MaxFlows, ptcp.MaxStripes)
	}
	return nil
}

// String is the setting as ParseSide reads it.
func (s Side) String() string {
	out := s.Transport
	if s.CC != "" || s.Count > 0 {
		out += ":" + s.CC
	}
	if s.Count > 0 {
		out += ":" + strconv.Itoa(s.Count)
	}
	return out
}

// Args are the flags that make a `bench transport` child run s.
func (s Side) Args() []string {
	var args []string
	switch s.Transport {
	case "sctp":
		args = append(args, "--sctp-cc", orDefault(s.CC, sctp.CCAuto))
		if s.Count > 0 {
			args = append(args, "--sctp-flows", strconv.Itoa(s.Count))
		}
	case "tcp", "tcpn", "ptcp":
		if s.CC != "" {
			args = append(args, "--tcp-cc="+s.CC)
		}
		if s.Count > 0 {
			args = append(args, "--ptcp-stripes", strconv.Itoa(s.Count))
		}
	}
	return args
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// The kinds of competitor.
const (
	// KindTCP is long-lived bulk TCP connections of this process's own,
	// each with TCP_CONGESTION set.
	KindTCP = "tcp"
	// KindIperf3 is iperf3 -C CC, with -P for several flows.
	KindIperf3 = "iperf3"
	// KindBraid is further braid associations (`bench transport` pairs).
	KindBraid = "braid"
)

// Competitor is what shares the link with braid's association. Written
// "cubic" (bulk TCP flows of this process, TCP_CONGESTION cubic),
// "iperf3:cubic" (iperf3 -C cubic), or a Side ("sctp:bbr", "tcpn"): more
// braid associations.
type Competitor struct {
	Kind string
	CC   string // KindTCP, KindIperf3: the flows' congestion control
	Side Side   // KindBraid
}

// ParseCompetitor reads a Competitor as String writes it.
func ParseCompetitor(s string) (Competitor, error) {
	if cc, ok := strings.CutPrefix(s, KindIperf3+":"); ok {
		if !ccName.MatchString(cc) {
			return Competitor{}, fmt.Errorf("%w: competitor %q: %q is no TCP congestion control name", ErrConfig, s, cc)
		}
		return Competitor{Kind: KindIperf3, CC: cc}, nil
	}
	name, _, _ := strings.Cut(s, ":")
	if slices.Contains(transports.Names, name) {
		side, err := ParseSide(s)
		return Competitor{Kind: KindBraid, Side: side}, err
	}
	if !ccName.MatchString(s) {
		return Competitor{}, fmt.Errorf("%w: competitor %q: want a TCP congestion control (cubic, bbr, reno), iperf3:CC or a braid setting (sctp:bbr)",
			ErrConfig, s)
	}
	return Competitor{Kind: KindTCP, CC: s}, nil
}

// String is the competitor as ParseCompetitor reads it.
func (c Competitor) String() string {
	switch c.Kind {
	case KindIperf3:
		return KindIperf3 + ":" + c.CC
	case KindBraid:
		return c.Side.String()
	}
	return c.CC
}

// HostCC is the TCP congestion control the case's hosts run (the bed's
// cc=): the competing flows', or a braid competitor's --tcp-cc; "" for the
// host's own.
func (c Competitor) HostCC() string {
	if c.Kind == KindBraid && c.Side.Transport != "sctp" {
		return c.Side.CC
	}
	return c.CC
}

// Pair is one case outside the grid of Sides × Against.
type Pair struct {
	Side    Side
	Against Competitor
}

// ParsePair reads "SIDE/COMPETITOR", e.g. "sctp/sctp" or "sctp:bbr/tcp:cubic".
func ParsePair(s string) (Pair, error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return Pair{}, fmt.Errorf("%w: pair %q: want SETTING/COMPETITOR, e.g. sctp/sctp", ErrConfig, s)
	}
	side, err := ParseSide(a)
	if err != nil {
		return Pair{}, err
	}
	c, err := ParseCompetitor(b)
	return Pair{Side: side, Against: c}, err
}

// Config is a fairness run: every loss rate × (each Side against each of
// Against, then the Pairs) × Runs cases, one after another, each on a bed
// of its own.
type Config struct {
	// The path: round-trip time (default 50 ms), rate (default "100M",
	// as netem reads it), the bottleneck's queue (default "1bdp", netem's
	// queue= syntax), random loss rates in percent (default 0, 0.1, 1).
	RTT    time.Duration
	Rate   string
	Queue  string
	Losses []float64
	// Sides are braid's association's settings; each runs against each
	// of Against.
	Sides   []Side
	Against []Competitor
	// Pairs are further cases, each at every loss rate.
	Pairs []Pair
	// Streams is the association's stream count (default 4); Flows the
	// competitor's flow count (default 1).
	Streams int
	Flows   int
	// Duration is how long every side sends (default 40 s); Warmup how
	// much of the shared interval is left out at its start (default 10 s).
	// The rates are over what remains, less Tail at its end.
	Duration time.Duration
	Warmup   time.Duration
	// Runs is the cases' repetitions (default 3).
	Runs int
	// Goal is the most braid's association may take on a clean path, in
	// multiples of a competing flow's rate (default 1.3).
	Goal float64
	// Options tune every braid child (passed as flags; a Side's own come
	// after them).
	Options transports.Options
	// Exe is the braid binary the children run.
	Exe string
	// Out is the output directory (results.json, results.csv, RESULTS.md,
	// plots), rewritten after every case.
	Out string
	// Command is the command line that made the run, for RESULTS.md.
	Command string
	// BedWait is how long a case waits for the test bed if another
	// process holds it (default 30 min).
	BedWait time.Duration
	// Log gets progress lines and the children's (default: discarded).
	Log io.Writer
}

// Tail is what the rates leave out at the end of the shared interval: the
// senders stop within it, as their ends' clocks say.
const Tail = time.Second

// minWindow is the shortest interval a rate is taken over.
const minWindow = 3 * time.Second

func (c Config) withDefaults() (Config, error) {
	if c.RTT <= 0 {
		c.RTT = 50 * time.Millisecond
	}
	c.Rate = orDefault(c.Rate, "100M")
	c.Queue = orDefault(c.Queue, "1bdp")
	if c.Losses == nil {
		c.Losses = []float64{0, 0.1, 1}
	}
	if c.Streams <= 0 {
		c.Streams = 4
	}
	if c.Flows <= 0 {
		c.Flows = 1
	}
	if c.Duration <= 0 {
		c.Duration = 40 * time.Second
	}
	if c.Warmup < 0 {
		return c, fmt.Errorf("%w: a negative warm-up", ErrConfig)
	}
	if c.Warmup == 0 {
		c.Warmup = 10 * time.Second
	}
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if c.Goal <= 0 {
		c.Goal = 1.3
	}
	if c.BedWait <= 0 {
		c.BedWait = 30 * time.Minute
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Exe == "" || c.Out == "":
		return c, fmt.Errorf("%w: Exe and Out are needed", ErrConfig)
	case len(c.cases()) == 0:
		return c, fmt.Errorf("%w: no case: want sides and competitors, or pairs", ErrConfig)
	case c.Duration-c.Warmup-Tail < minWindow:
		return c, fmt.Errorf("%w: a duration of %s leaves less than %s after the %s warm-up and the %s tail",
			ErrConfig, c.Duration, minWindow, c.Warmup, Tail)
	}
	for _, l := range c.Losses {
		if l < 0 || l >= 100 {
			return c, fmt.Errorf("%w: loss %v%%", ErrConfig, l)
		}
	}
	_, err := netem.Parse(c.spec(0, ""))
	if err != nil {
		return c, fmt.Errorf("%w: the path: %v", ErrConfig, err)
	}
	return c, nil
}

// spec is a case's bed: the path, with loss% and the hosts' cc.
func (c Config) spec(loss float64, cc string) string {
	s := fmt.Sprintf("rtt=%s,rate=%s,queue=%s,loss=%s%%", c.RTT, c.Rate, c.Queue, strconv.FormatFloat(loss, 'f', -1, 64))
	if cc != "" {
		s += ",cc=" + cc
	}
	return s
}

// cases are the pairs one loss rate runs, in order: each side against
// each competitor, then the extra pairs.
func (c Config) cases() []Pair {
	var out []Pair
	for _, s := range c.Sides {
		for _, a := range c.Against {
			out = append(out, Pair{s, a})
		}
	}
	return append(out, c.Pairs...)
}

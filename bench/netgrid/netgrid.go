// Package netgrid is the data and the report of `braid bench net`: whole
// jobs through the emulated WAN (package netem) over a grid of round-trip
// times, loss rates and unit sizes, for each of several transport
// settings, and how braid's default setting fares against the best of
// them at each point (issue 10, parts 6 and 7).
//
// Run starts a server in one namespace and the workers in the other for
// each condition and setting (package netcluster), submits one `noop`
// repeat job per unit size (or more, as Job says) and records the job's
// throughput and its units' latencies. Summarize picks each point's best
// setting; Write lays the results out as CSV, JSON, plots and RESULTS.md.
package netgrid

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/braidhq/braid/internal/benchout"
	"github.com/braidhq/braid/netem"
	"github.com/braidhq/braid/transport/ptcp"
	"github.com/braidhq/braid/transport/sctp"
)

// Setting is one transport configuration of the grid: a transport name,
// with a count for sctp (its flows, --sctp-flows) and ptcp (its stripes,
// --ptcp-stripes), and a congestion control. Written NAME[:N][@CC]:
// "sctp@bbr", "sctp:1", "ptcp:8@cubic", "tcp@reno".
//
// CC means two things, as the transports differ: for tcp, tcpn and ptcp
// it is the hosts' TCP congestion control (the bed's cc=, both
// namespaces' default), empty for the machine's own; for sctp it is the
// userspace stack's own (--sctp-cc), auto when not given, and a fixed
// count goes with reno only (flows are reno's). quic takes none.
type Setting struct {
	Transport string
	Count     int    // 0: the transport's default (auto for both)
	CC        string // see above
}

// ParseSetting reads "NAME[:N][@CC]". Plain sctp is sctp@auto.
func ParseSetting(s string) (Setting, error) {
	rest, cc, hasCC := strings.Cut(s, "@")
	name, n, ok := strings.Cut(rest, ":")
	st := Setting{Transport: name, CC: cc}
	switch name {
	case "sctp", "ptcp":
	case "tcp", "tcpn", "quic":
		if ok {
			return st, fmt.Errorf("setting %q: only sctp (flows) and ptcp (stripes) take a count", s)
		}
	default:
		return st, fmt.Errorf("setting %q: want sctp, tcp, tcpn, quic or ptcp, with :N after sctp or ptcp and @CC after any but quic", s)
	}
	if ok {
		most := sctp.MaxFlows
		if name == "ptcp" {
			most = ptcp.MaxStripes
		}
		c, err := strconv.Atoi(n)
		if err != nil || c < 1 || c > most {
			return st, fmt.Errorf("setting %q: the count must be 1 to %d", s, most)
		}
		st.Count = c
	}
	if hasCC {
		if err := checkCC(st); err != nil {
			return st, fmt.Errorf("setting %q: %w", s, err)
		}
	}
	if name == "sctp" && st.Count == 0 && st.CC == "" {
		st.CC = sctp.CCAuto
	}
	return st, nil
}

// checkCC checks a setting's congestion control, given after @.
func checkCC(st Setting) error {
	switch st.Transport {
	case "quic":
		return errors.New("quic has its own congestion control: no @CC")
	case "sctp":
		if !slices.Contains(sctp.CCNames, st.CC) {
			return fmt.Errorf("sctp's congestion control is one of %s", strings.Join(sctp.CCNames, ", "))
		}
		if st.Count > 0 && st.CC != sctp.CCReno {
			return fmt.Errorf("a fixed flow count is reno's (MulTCP); %s has none", st.CC)
		}
		return nil
	}
	if _, err := netem.Parse("cc=" + st.CC); err != nil {
		return fmt.Errorf("the hosts' congestion control: %w", err)
	}
	return nil
}

// String is the setting as ParseSetting reads it.
func (s Setting) String() string {
	out := s.Transport
	if s.Count > 0 {
		out += ":" + strconv.Itoa(s.Count)
	}
	if s.CC != "" {
		out += "@" + s.CC
	}
	return out
}

// hostsCC reports whether the setting's CC is the hosts' TCP one (tcp,
// tcpn, ptcp) rather than a stack's own (sctp) or none (quic).
func (s Setting) hostsCC() bool {
	return s.Transport == "tcp" || s.Transport == "tcpn" || s.Transport == "ptcp"
}

// resolved is s with the hosts' congestion control named: own (the
// machine's) where a TCP setting gives none.
func (s Setting) resolved(own string) Setting {
	if s.hostsCC() && s.CC == "" {
		s.CC = own
	}
	return s
}

// bedCC is the congestion control of the hosts the setting runs between:
// its own for tcp, tcpn and ptcp, the machine's (own) for the others,
// whose data plane is not the kernel's TCP.
func (s Setting) bedCC(own string) string {
	if s.hostsCC() && s.CC != "" {
		return s.CC
	}
	return own
}

// Default is braid's default setting: what a cluster runs without
// transport flags.
var Default = Setting{Transport: "sctp", CC: sctp.CCAuto}

// Canonical is the grid's settings: one TCP connection (tcp), one per
// stream (tcpn) and psock striping (ptcp) under each congestion control a
// host may run, braid's sctp under each of its own (issue 40.5), and
// sctp:1, the seed paper's SCTP (one association, one reno flow).
const Canonical = "tcp@reno,tcpn@reno,ptcp@reno,tcp@cubic,tcpn@cubic,ptcp@cubic,tcp@bbr,tcpn@bbr,ptcp@bbr," +
	"sctp@reno,sctp@cubic,sctp@bbr,sctp@auto,sctp:1"

// Condition is one emulated link: both directions alike.
type Condition struct {
	RTT  time.Duration
	Loss float64 // percent
}

// Spec is the condition as `braid net` reads it, with the link's rate
// and the hosts' TCP congestion control (none: the machine's own).
func (c Condition) Spec(rate, cc string) string {
	s := fmt.Sprintf("rtt=%s,loss=%s%%,rate=%s", c.RTT, strconv.FormatFloat(c.Loss, 'f', -1, 64), rate)
	if cc != "" {
		s += ",cc=" + cc
	}
	return s
}

func (c Condition) String() string {
	return fmt.Sprintf("%s, %s%% loss", c.RTT, strconv.FormatFloat(c.Loss, 'f', -1, 64))
}

// Result is one job of the grid.
type Result struct {
	RTTMS   float64 `json:"rtt_ms"`
	LossPct float64 `json:"loss_pct"`
	Size    int     `json:"unit_bytes"`
	Setting string  `json:"setting"`
	// HostCC is the hosts' TCP congestion control in the bed the job ran
	// in (for tcp, tcpn and ptcp the setting's; empty in older runs,
	// which ran reno).
	HostCC string `json:"host_cc,omitempty"`
	Run    int    `json:"run"`
	Units  int    `json:"units"`
	// Done counts the units finished; below Units when the job reached
	// the time budget (Cut) and was cancelled.
	Done    int     `json:"done"`
	Cut     bool    `json:"cut"`
	Seconds float64 `json:"seconds"` // makespan, or the budget when cut
	// UnitsPerSec is Done / Seconds.
	UnitsPerSec float64 `json:"units_per_sec"`
	// P50MS and P99MS are the finished units' latencies, from the server
	// sending a unit to its result arriving.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// Condition is the result's link.
func (r Result) Condition() Condition {
	return Condition{RTT: time.Duration(r.RTTMS * float64(time.Millisecond)), Loss: r.LossPct}
}

// Spread is a setting's jobs at a point: the median rate and the range
// of their rates.
type Spread struct {
	Median, Min, Max float64
}

// Point is one (condition, unit size) of the grid with the median rate
// of each setting measured there.
type Point struct {
	Condition Condition
	Size      int
	Rates     map[string]float64 // setting → median units/s
	Spreads   map[string]Spread  // setting → its jobs' rates
	P99MS     map[string]float64 // setting → median p99 latency
	Cut       map[string]bool    // setting → some run reached the budget
	Jobs      map[string]int     // setting → jobs its medians are over
	Best      string             // the setting with the highest median rate
	// Ties are the settings other than Best whose median lies within the
	// best's spread (at or above its slowest job): as good as the best
	// as far as these jobs can tell.
	Ties map[string]bool
	// Ratio is the default's rate over the best's: 1 when the default is
	// best or nothing finished a unit, 0 when the default was not run.
	Ratio float64
}

// Meets reports whether setting s did as well as the floor asks at p: its
// median at least floor × the best's, or a tie with the best, or the best.
// A setting not run there does not meet it.
func (p Point) Meets(s string, floor float64) bool {
	v, ok := p.Rates[s]
	if !ok {
		return false
	}
	best := p.Rates[p.Best]
	return s == p.Best || p.Ties[s] || best <= 0 || v >= floor*best
}

// Summarize groups results into points, in the grid's order; def is the
// default setting as the results name it.
func Summarize(rs []Result, def string) []Point {
	type key struct {
		c    Condition
		size int
	}
	var order []key
	byKey := map[key]map[string][]Result{}
	for _, r := range rs {
		k := key{r.Condition(), r.Size}
		if byKey[k] == nil {
			byKey[k] = map[string][]Result{}
			order = append(order, k)
		}
		byKey[k][r.Setting] = append(byKey[k][r.Setting], r)
	}
	var out []Point
	for _, k := range order {
		p := Point{Condition: k.c, Size: k.size, Rates: map[string]float64{}, Spreads: map[string]Spread{},
			P99MS: map[string]float64{}, Cut: map[string]bool{}, Jobs: map[string]int{}, Ties: map[string]bool{}}
		for s, runs := range byKey[k] {
			p.Jobs[s] = len(runs)
			var rates, p99 []float64
			for _, r := range runs {
				rates, p99 = append(rates, r.UnitsPerSec), append(p99, r.P99MS)
				p.Cut[s] = p.Cut[s] || r.Cut
			}
			slices.Sort(rates)
			slices.Sort(p99)
			med := benchout.Quantile(rates, 0.5)
			p.Rates[s], p.P99MS[s] = med, benchout.Quantile(p99, 0.5)
			p.Spreads[s] = Spread{Median: med, Min: rates[0], Max: rates[len(rates)-1]}
		}
		for _, s := range slices.Sorted(maps.Keys(p.Rates)) {
			if p.Best == "" || p.Rates[s] > p.Rates[p.Best] {
				p.Best = s
			}
		}
		for s, v := range p.Rates {
			if s != p.Best && v >= p.Spreads[p.Best].Min {
				p.Ties[s] = true
			}
		}
		_, ran := p.Rates[def]
		switch best := p.Rates[p.Best]; {
		case !ran:
			p.Ratio = 0
		case best <= 0:
			p.Ratio = 1 // nothing finished a unit: no setting beat the default
		default:
			p.Ratio = p.Rates[def] / best
		}
		out = append(out, p)
	}
	return out
}

package fair

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSide(t *testing.T) {
	for in, want := range map[string]struct {
		side Side
		args []string
	}{
		"sctp":         {Side{Transport: "sctp"}, []string{"--sctp-cc", "auto"}},
		"sctp:bbr":     {Side{Transport: "sctp", CC: "bbr"}, []string{"--sctp-cc", "bbr"}},
		"sctp:reno:16": {Side{"sctp", "reno", 16}, []string{"--sctp-cc", "reno", "--sctp-flows", "16"}},
		"sctp::8":      {Side{Transport: "sctp", Count: 8}, []string{"--sctp-cc", "auto", "--sctp-flows", "8"}},
		"tcp":          {Side{Transport: "tcp"}, nil},
		"tcpn:cubic":   {Side{Transport: "tcpn", CC: "cubic"}, []string{"--tcp-cc=cubic"}},
		"ptcp:bbr:8":   {Side{"ptcp", "bbr", 8}, []string{"--tcp-cc=bbr", "--ptcp-stripes", "8"}},
		"quic":         {Side{Transport: "quic"}, nil},
	} {
		got, err := ParseSide(in)
		if err != nil {
			t.Errorf("ParseSide(%q): %v", in, err)
			continue
		}
		if got != want.side || !slices.Equal(got.Args(), want.args) || got.String() != in {
			t.Errorf("ParseSide(%q) = %+v, args %q, written %q; want %+v, %q", in, got, got.Args(), got.String(), want.side, want.args)
		}
	}
	for _, bad := range []string{"", "udp", "sctp:vegas", "sctp:bbr:0", "sctp:bbr:99", "tcp:cubic:4", "tcp:Cubic",
		"quic:bbr", "sctp:bbr:4:4", "tcpn::x"} {
		if s, err := ParseSide(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseSide(%q) = %+v, %v; want ErrConfig", bad, s, err)
		}
	}
}

func TestParseCompetitor(t *testing.T) {
	for in, want := range map[string]Competitor{
		"cubic":        {Kind: KindTCP, CC: "cubic"},
		"bbr":          {Kind: KindTCP, CC: "bbr"},
		"iperf3:cubic": {Kind: KindIperf3, CC: "cubic"},
		"sctp:bbr":     {Kind: KindBraid, Side: Side{Transport: "sctp", CC: "bbr"}},
		"tcp":          {Kind: KindBraid, Side: Side{Transport: "tcp"}},
	} {
		got, err := ParseCompetitor(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseCompetitor(%q) = %+v (%q), %v; want %+v", in, got, got.String(), err, want)
		}
	}
	for _, bad := range []string{"", "iperf3:", "iperf3:CUBIC", "sctp:vegas", "cubic bbr"} {
		if c, err := ParseCompetitor(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParseCompetitor(%q) = %+v, %v; want ErrConfig", bad, c, err)
		}
	}
	// The bed's hosts run the competing flows' congestion control, or a
	// braid TCP competitor's; sctp leaves the hosts' own.
	for in, want := range map[string]string{"cubic": "cubic", "iperf3:bbr": "bbr", "tcpn:cubic": "cubic", "sctp:cubic": "", "tcp": ""} {
		c, _ := ParseCompetitor(in)
		if got := c.HostCC(); got != want {
			t.Errorf("%s: HostCC %q, want %q", in, got, want)
		}
	}
	p, err := ParsePair("sctp:bbr/tcp:cubic")
	if err != nil || p.Side.String() != "sctp:bbr" || p.Against.Kind != KindBraid || p.Against.Side.String() != "tcp:cubic" {
		t.Errorf("ParsePair = %+v, %v", p, err)
	}
	for _, bad := range []string{"sctp", "sctp/", "/cubic", "udp/cubic"} {
		if _, err := ParsePair(bad); !errors.Is(err, ErrConfig) {
			t.Errorf("ParsePair(%q): %v, want ErrConfig", bad, err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	sctp, _ := ParseSide("sctp")
	cubic, _ := ParseCompetitor("cubic")
	c, err := Config{Sides: []Side{sctp}, Against: []Competitor{cubic}, Exe: "braid", Out: "out"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.RTT != 50*time.Millisecond || c.Rate != "100M" || c.Queue != "1bdp" || !slices.Equal(c.Losses, []float64{0, 0.1, 1}) ||
		c.Streams != 4 || c.Flows != 1 || c.Runs != 3 || c.Goal != 1.3 || c.Duration != 40*time.Second || c.Warmup != 10*time.Second {
		t.Errorf("defaults %+v", c)
	}
	if got := c.spec(0.1, "cubic"); got != "rtt=50ms,rate=100M,queue=1bdp,loss=0.1%,cc=cubic" {
		t.Errorf("spec %q", got)
	}
	for name, bad := range map[string]Config{
		"no case":         {Exe: "braid", Out: "out"},
		"short":           {Sides: c.Sides, Against: c.Against, Exe: "braid", Out: "out", Duration: 10 * time.Second, Warmup: 8 * time.Second},
		"queue":           {Sides: c.Sides, Against: c.Against, Exe: "braid", Out: "out", Queue: "lots"},
		"loss":            {Sides: c.Sides, Against: c.Against, Exe: "braid", Out: "out", Losses: []float64{100}},
		"no exe":          {Sides: c.Sides, Against: c.Against, Out: "out"},
		"negative warmup": {Sides: c.Sides, Against: c.Against, Exe: "braid", Out: "out", Warmup: -time.Second},
	} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	pair, _ := ParsePair("sctp/sctp")
	c.Pairs = []Pair{pair}
	var got []string
	for _, p := range c.cases() {
		got = append(got, p.Side.String()+"/"+p.Against.String())
	}
	if strings.Join(got, " ") != "sctp/cubic sctp/sctp" {
		t.Errorf("cases %v", got)
	}
}

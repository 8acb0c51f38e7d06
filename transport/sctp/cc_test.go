package sctp

import (
	"testing"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/transporttest"
)

// TestConfigCC: CC takes auto, reno, cubic, bbr and bbr-cubic; a fixed flow count
// goes with reno only; auto is DefaultCC, or reno with a fixed count; a
// peer on this host always gets reno.
func TestConfigCC(t *testing.T) {
	for _, c := range []Config{{CC: "vegas"}, {CC: CCBBR, Flows: 4}, {CC: CCCubic, Flows: 1}, {CC: CCBBRCubic, Flows: 2}} {
		if _, err := c.withDefaults(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	for _, tc := range []struct {
		c     Config
		local bool
		want  string
	}{
		{Config{}, false, DefaultCC},
		{Config{CC: CCAuto}, false, DefaultCC},
		{Config{Flows: 4}, false, CCReno},
		{Config{CC: CCReno, Flows: 4}, false, CCReno},
		{Config{CC: CCCubic}, false, CCCubic},
		{Config{CC: CCBBR}, false, CCBBR},
		{Config{CC: CCBBR}, true, CCReno},
		{Config{CC: CCBBRCubic}, false, CCBBRCubic},
	} {
		if _, err := tc.c.withDefaults(); err != nil {
			t.Errorf("%+v: %v", tc.c, err)
		}
		if got := tc.c.ccFor(tc.local); got != tc.want {
			t.Errorf("%+v, local %v: %s, want %s", tc.c, tc.local, got, tc.want)
		}
	}
}

// TestCCOnLoopback: a peer on this host gets reno whatever CC says.
func TestCCOnLoopback(t *testing.T) {
	lc, dc := transport.ListenConfig{Secret: secret}, transport.DialConfig{Secret: secret}
	d, l := loopbackPair(t, New(Config{CC: CCBBR}), lc, dc)
	for _, a := range []transport.Association{d, l} {
		if got := a.(*Association).pa.CongestionControl(); got != CCReno {
			t.Errorf("%s: %s on loopback, want reno", a.LocalAddr(), got)
		}
	}
}

// TestCCThroughBed is each controller's conformance run: through an
// emulated 10 Mbit/s, 50 ms path with 1% random loss (a bandwidth-delay
// product of 62.5 KB), an association of it carries a bulk transfer whole
// and ends as its design says. Loss-based reno (one flow) and cubic read
// the loss as congestion: their ssthresh came down from the peer's 8 MiB
// window to where losses cut it, and their window stays within twice the
// bandwidth-delay product (the link and its queue hold 3.3 times it). bbr
// does not: its model holds the link's rate, it paces at about that rate
// (its window, a snapshot taken in Fast Recovery's packet conservation,
// may be the flight at the end), and it is in ProbeBW (or ProbeRTT) by then.
// reno and cubic send 2 MiB, some 1,700 packets and 17 random losses: with 1 MiB a
// cubic run whose slow start met no random loss ended at the one cut the
// queue's overflow made (2.4 times the product), twice on a busy host.
func TestCCThroughBed(t *testing.T) {
	const link = 10e6 / 8 // bytes a second
	const bdp = link * 0.05
	transporttest.UpBed(t, "rtt=50ms,loss=1%,rate=10M")
	for i, tc := range []struct {
		name  string
		cfg   Config
		bytes int
	}{
		{CCReno, Config{CC: CCReno, Flows: 1}, 2 << 20},
		{CCCubic, Config{CC: CCCubic}, 2 << 20},
		{CCBBR, Config{CC: CCBBR}, 4 << 20},
		{CCBBRCubic, Config{CC: CCBBRCubic}, 4 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, l := transporttest.AcrossBed(t, New(tc.cfg), 47630+i)
			transporttest.SendBulk(t, d, l, tc.bytes)
			info := d.(*Association).pa.CongestionInfo()
			if info.Name != tc.name {
				t.Fatalf("the sender runs %s, want %s", info.Name, tc.name)
			}
			t.Logf("%+v", info)
			switch tc.name {
			case CCBBR, CCBBRCubic:
				if info.BottleneckRate < 0.5*link || info.BottleneckRate > 1.5*link {
					t.Errorf("bbr estimates the link at %.0f B/s, want about %.0f: random loss is not congestion", info.BottleneckRate, link)
				}
				if info.PacingRate < 0.5*link {
					t.Errorf("bbr paces at %.0f B/s, want about the link's %.0f", info.PacingRate, link)
				}
				if info.Phase != "ProbeBW" && info.Phase != "ProbeRTT" {
					t.Errorf("bbr in %s after %d MiB, want ProbeBW", info.Phase, tc.bytes>>20)
				}
			default:
				if info.SSThresh > 2*bdp {
					t.Errorf("%s's ssthresh %d: never cut by a loss", tc.name, info.SSThresh)
				}
				if info.Window > 2*bdp {
					t.Errorf("%s's window %d at 1%% loss, want within twice the bandwidth-delay product %.0f", tc.name, info.Window, bdp)
				}
			}
		})
	}
}

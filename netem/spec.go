package netem

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Spec is an emulated network: one or more paths between the two hosts,
// plus settings of the hosts themselves.
type Spec struct {
	Paths []Path
	// Seed seeds the loss and jitter draws (0: from the clock).
	Seed uint64
	// CC, if set, is the TCP congestion control set in both namespaces
	// (net.ipv4.tcp_congestion_control), e.g. "reno", "cubic" or "bbr":
	// any the kernel has or can load (Up allows it in the root namespace
	// while the bed runs; see cc.go).
	CC string
	// Source is the string Parse read.
	Source string
}

// Path is one link between the hosts: a direction each way.
type Path struct {
	AB, BA Dir // braid-a to braid-b, and back
	// MTU of the path's TUN devices (default 1500).
	MTU int
}

// Dir is the model of one direction of a path. The zero value is a perfect
// link limited only by the emulator.
type Dir struct {
	Delay  time.Duration // one-way propagation delay
	Jitter time.Duration // uniform extra delay in [-Jitter, +Jitter], never reordering
	Loss   float64       // probability of random loss per packet, 0 to 1
	// GE, if set, is a Gilbert–Elliott bursty loss channel.
	GE *GE
	// Rate is the bottleneck rate in bits/s (0: unlimited).
	Rate float64
	// QueueBytes or QueuePackets bound the bottleneck's queue (tail drop);
	// at most one is set. Neither: DefaultQueue.
	QueueBytes   int
	QueuePackets int

	queueBDP float64 // queue=Nbdp until the path resolves it to bytes
}

// GE is a Gilbert–Elliott channel: a good and a bad state, with per-packet
// transition probabilities P (good to bad) and R (bad to good), and loss
// probabilities LossGood and LossBad in each. The mean burst is 1/R
// packets; the mean loss P/(P+R)·LossBad + R/(P+R)·LossGood.
type GE struct {
	P, R              float64
	LossGood, LossBad float64
}

// MeanLoss is the channel's long-run loss probability.
func (g GE) MeanLoss() float64 {
	if g.P+g.R == 0 {
		return g.LossGood
	}
	bad := g.P / (g.P + g.R)
	return bad*g.LossBad + (1-bad)*g.LossGood
}

// DefaultMTU is a path's MTU unless the spec sets one.
const DefaultMTU = 1500

// MinQueuePackets is the smallest default queue: a rate-limited direction
// without queue= holds max(one BDP, MinQueuePackets full-size packets),
// the BDP taken at the path's round-trip delay. One BDP is what a single
// reno flow needs to keep the link busy after halving its window.
const MinQueuePackets = 100

// ErrSpec is returned for a spec string Parse rejects.
var ErrSpec = errors.New("netem: bad spec")

// DefaultQueue is the queue limit in bytes that d gets without queue=, on
// a path of round-trip delay rtt and the given MTU.
func (d Dir) DefaultQueue(rtt time.Duration, mtu int) int {
	bdp := d.Rate / 8 * rtt.Seconds()
	return max(int(bdp), MinQueuePackets*mtu)
}

// RTT is the path's round-trip propagation delay (no queueing, no jitter).
func (p Path) RTT() time.Duration { return p.AB.Delay + p.BA.Delay }

// Parse reads a spec string:
//
//	SPEC    = PATH { ";" PATH }
//	PATH    = SETTING { "," SETTING }
//	SETTING = [ "ab." | "ba." ] KEY "=" VALUE
//
// Keys of a direction (both directions unless prefixed):
//
//	delay=25ms     one-way delay (Go duration)
//	jitter=2ms     uniform extra delay in [-J, +J]; packets are never reordered
//	loss=1%        random loss (a percentage)
//	ge=P%:R%[:B%[:G%]]  Gilbert–Elliott loss: P(good→bad), P(bad→good),
//	               loss in the bad state (default 100%) and in the good one (0%)
//	rate=100M      bottleneck rate in bit/s: k, M, G suffixes (1000s), "bit"
//	               or "bps" allowed after them (100Mbit); none: unlimited
//	queue=100p     bottleneck queue: packets (p), bytes (B, KB, MB, KiB,
//	               MiB, or a plain number) or BDPs (1bdp); default one BDP,
//	               at least 100 packets
//
// Keys of a path: rtt=50ms (round-trip delay, split equally: delay=25ms
// each way; not with a bare delay=), mtu=1500 (576 to 9000).
// Keys of the spec, once in any path: seed=N (random draws), cc=NAME (TCP
// congestion control in both namespaces: reno, cubic, bbr or any other the
// kernel has; Parse checks the name's form, Up that the kernel has it).
//
// A prefixed setting overrides the bare one ("rate=100M,ba.rate=10M"); a
// setting given twice is an error. The empty string is one perfect path;
// an empty path beside others is an error.
func Parse(s string) (Spec, error) {
	spec := Spec{Source: s}
	seen := map[string]bool{}
	for i, ps := range strings.Split(s, ";") {
		if strings.TrimSpace(ps) == "" && strings.TrimSpace(s) != "" {
			return Spec{}, fmt.Errorf("%w: path %d is empty (a stray ';'?)", ErrSpec, i+1)
		}
		p, err := parsePath(&spec, seen, ps)
		if err != nil {
			return Spec{}, fmt.Errorf("%w: path %d: %w", ErrSpec, i+1, err)
		}
		spec.Paths = append(spec.Paths, p)
	}
	if len(spec.Paths) > MaxPaths {
		return Spec{}, fmt.Errorf("%w: %d paths, at most %d", ErrSpec, len(spec.Paths), MaxPaths)
	}
	return spec, nil
}

// MaxPaths is the most paths a spec may have.
const MaxPaths = 8

// pathSettings collects a path's settings before they are resolved: the
// bare ones and the per-direction ones, keyed by key.
type pathSettings struct {
	both, ab, ba map[string]string
}

func parsePath(spec *Spec, seen map[string]bool, s string) (Path, error) {
	ps := pathSettings{both: map[string]string{}, ab: map[string]string{}, ba: map[string]string{}}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		if !ok || val == "" {
			return Path{}, fmt.Errorf("%q: want KEY=VALUE", item)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if err := ps.add(spec, seen, key, val); err != nil {
			return Path{}, err
		}
	}
	return ps.resolve()
}

func (ps *pathSettings) add(spec *Spec, seen map[string]bool, key, val string) error {
	switch key {
	case "seed":
		if seen[key] {
			return fmt.Errorf("seed given twice")
		}
		seen[key] = true
		n, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return fmt.Errorf("seed=%s: want a whole number", val)
		}
		spec.Seed = n
		return nil
	case "cc":
		if seen[key] {
			return fmt.Errorf("cc given twice")
		}
		seen[key] = true
		if !validCC(val) {
			return fmt.Errorf("cc=%s: want a congestion control name such as reno, cubic or bbr", val)
		}
		spec.CC = val
		return nil
	}
	m := ps.both
	if d, k, ok := strings.Cut(key, "."); ok {
		switch d {
		case "ab":
			m = ps.ab
		case "ba":
			m = ps.ba
		default:
			return fmt.Errorf("%s: direction %q (want ab or ba)", key, d)
		}
		key = k
		if key == "rtt" || key == "mtu" {
			return fmt.Errorf("%s.%s: %s belongs to the path, not a direction", d, key, key)
		}
	}
	if !knownKey(key) {
		return fmt.Errorf("unknown key %q (want rtt, delay, jitter, loss, ge, rate, queue, mtu, seed or cc)", key)
	}
	if _, dup := m[key]; dup {
		return fmt.Errorf("%s given twice", key)
	}
	m[key] = val
	return nil
}

func knownKey(k string) bool {
	switch k {
	case "rtt", "delay", "jitter", "loss", "ge", "rate", "queue", "mtu":
		return true
	}
	return false
}

func validCC(s string) bool {
	if len(s) == 0 || len(s) > 15 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// resolve turns the settings into a Path: bare settings for both
// directions, then the prefixed ones on top.
func (ps *pathSettings) resolve() (Path, error) {
	p := Path{MTU: DefaultMTU}
	if v, ok := ps.both["mtu"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 576 || n > 9000 {
			return Path{}, fmt.Errorf("mtu=%s: want 576 to 9000", v)
		}
		p.MTU = n
	}
	if rtt, ok := ps.both["rtt"]; ok {
		if _, dup := ps.both["delay"]; dup {
			return Path{}, fmt.Errorf("rtt and delay both set; give one")
		}
		d, err := parseDuration("rtt", rtt)
		if err != nil {
			return Path{}, err
		}
		ps.both["delay"] = (d / 2).String()
	}
	for _, dir := range []struct {
		d *Dir
		m map[string]string
	}{{&p.AB, ps.ab}, {&p.BA, ps.ba}} {
		for _, m := range []map[string]string{ps.both, dir.m} {
			if err := dir.d.set(m); err != nil {
				return Path{}, err
			}
		}
		if err := dir.d.check(); err != nil {
			return Path{}, err
		}
	}
	for _, d := range []*Dir{&p.AB, &p.BA} {
		if d.queueBDP > 0 {
			bdp := d.Rate / 8 * p.RTT().Seconds() * d.queueBDP
			d.QueueBytes = max(p.MTU, int(min(bdp, 1<<30)))
			d.queueBDP = 0
		}
	}
	return p, nil
}

// set applies the direction keys of m to d.
func (d *Dir) set(m map[string]string) error {
	var err error
	for k, v := range m {
		switch k {
		case "delay":
			d.Delay, err = parseDuration(k, v)
		case "jitter":
			d.Jitter, err = parseDuration(k, v)
		case "loss":
			d.Loss, err = parsePercent(k, v)
		case "ge":
			d.GE, err = parseGE(v)
		case "rate":
			d.Rate, err = parseRate(v)
		case "queue":
			err = d.setQueue(v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// check rejects combinations that cannot work.
func (d *Dir) check() error {
	if d.Jitter > d.Delay {
		return fmt.Errorf("jitter %v over the delay %v it varies", d.Jitter, d.Delay)
	}
	if (d.QueueBytes > 0 || d.QueuePackets > 0 || d.queueBDP > 0) && d.Rate == 0 {
		return fmt.Errorf("queue= needs a rate=")
	}
	return nil
}

// MaxDelay bounds delay, rtt and jitter.
const MaxDelay = 10 * time.Second

func parseDuration(k, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxDelay {
		return 0, fmt.Errorf("%s=%s: want a duration from 0 to %v, e.g. 20ms", k, v, MaxDelay)
	}
	return d, nil
}

// parsePercent reads "1%" or "0.5%" as a probability.
func parsePercent(k, v string) (float64, error) {
	num, ok := strings.CutSuffix(v, "%")
	if !ok {
		return 0, fmt.Errorf("%s=%s: write a percentage, e.g. 1%%", k, v)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		return 0, fmt.Errorf("%s=%s: want 0%% to 100%%", k, v)
	}
	return f / 100, nil
}

func parseGE(v string) (*GE, error) {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("ge=%s: want P%%:R%%[:BAD%%[:GOOD%%]]", v)
	}
	g := &GE{LossBad: 1}
	fields := []*float64{&g.P, &g.R, &g.LossBad, &g.LossGood}
	for i, s := range parts {
		f, err := parsePercent("ge", s)
		if err != nil {
			return nil, err
		}
		*fields[i] = f
	}
	if g.R == 0 && g.P > 0 {
		return nil, fmt.Errorf("ge=%s: R (bad to good) 0%% never leaves the bad state", v)
	}
	return g, nil
}

// MaxRate bounds rate=: far past what the emulator can carry (see Ceiling).
const MaxRate = 100e9

// parseRate reads a rate in bit/s: "100M", "1.5G", "500k", "100Mbit".
func parseRate(v string) (float64, error) {
	s := strings.ToLower(v)
	s = strings.TrimSuffix(strings.TrimSuffix(s, "bit"), "bps")
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1e3, s[:len(s)-1]
	case strings.HasSuffix(s, "m"):
		mult, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "g"):
		mult, s = 1e9, s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	r := f * mult
	if err != nil || math.IsNaN(r) || r < 8e3 || r > MaxRate {
		return 0, fmt.Errorf("rate=%s: want 8k to 100G bit/s, e.g. 100M", v)
	}
	return r, nil
}

// setQueue reads a queue limit: "100p", "64KB", "1bdp".
func (d *Dir) setQueue(v string) error {
	s := strings.ToLower(v)
	d.QueueBytes, d.QueuePackets, d.queueBDP = 0, 0, 0
	type unit struct {
		suffix string
		mult   float64
	}
	units := []unit{{"bdp", -2}, {"pkt", -1}, {"p", -1}, {"kib", 1 << 10}, {"mib", 1 << 20},
		{"kb", 1e3}, {"mb", 1e6}, {"b", 1}, {"", 1}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f > 1<<30 {
			break
		}
		switch u.mult {
		case -1:
			if f != math.Trunc(f) {
				return fmt.Errorf("queue=%s: a whole number of packets", v)
			}
			d.QueuePackets = int(f)
		case -2:
			d.queueBDP = f
		default:
			if f*u.mult < 1 || f*u.mult > 1<<30 {
				break
			}
			d.QueueBytes = int(f * u.mult)
		}
		if d.QueueBytes > 0 || d.QueuePackets > 0 || d.queueBDP > 0 {
			return nil
		}
	}
	return fmt.Errorf("queue=%s: want packets (100p), bytes (64KB, 1MiB) or BDPs (1bdp), at most 1 GiB", v)
}

// String writes d the way `braid net status` shows it.
func (d Dir) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "delay %v", d.Delay)
	if d.Jitter > 0 {
		fmt.Fprintf(&b, " ±%v", d.Jitter)
	}
	if d.Loss > 0 {
		fmt.Fprintf(&b, ", loss %s", pct(d.Loss))
	}
	if g := d.GE; g != nil {
		fmt.Fprintf(&b, ", ge p=%s r=%s bad=%s good=%s (mean %s)", pct(g.P), pct(g.R), pct(g.LossBad), pct(g.LossGood), pct(g.MeanLoss()))
	}
	if d.Rate > 0 {
		fmt.Fprintf(&b, ", rate %s", FormatRate(d.Rate))
		switch {
		case d.QueuePackets > 0:
			fmt.Fprintf(&b, ", queue %d packets", d.QueuePackets)
		case d.QueueBytes > 0:
			fmt.Fprintf(&b, ", queue %d B", d.QueueBytes)
		}
	} else {
		b.WriteString(", rate unlimited")
	}
	return b.String()
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'g', 4, 64) + "%" }

// FormatRate writes bits/s as "100 Mbit/s".
func FormatRate(r float64) string {
	switch {
	case r >= 1e9:
		return strconv.FormatFloat(r/1e9, 'g', 4, 64) + " Gbit/s"
	case r >= 1e6:
		return strconv.FormatFloat(r/1e6, 'g', 4, 64) + " Mbit/s"
	}
	return strconv.FormatFloat(r/1e3, 'g', 4, 64) + " kbit/s"
}

package netem

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		in   string
		want []Path
		seed uint64
		cc   string
	}{
		{"", []Path{{MTU: 1500}}, 0, ""},
		{"rtt=50ms,loss=1%,rate=100M", []Path{{
			AB: Dir{Delay: 25 * ms, Loss: 0.01, Rate: 100e6}, BA: Dir{Delay: 25 * ms, Loss: 0.01, Rate: 100e6}, MTU: 1500}}, 0, ""},
		{"delay=10ms, jitter=1ms ,ab.rate=1.5G,ba.rate=500kbit,queue=50p,mtu=9000", []Path{{
			AB: Dir{Delay: 10 * ms, Jitter: ms, Rate: 1.5e9, QueuePackets: 50},
			BA: Dir{Delay: 10 * ms, Jitter: ms, Rate: 500e3, QueuePackets: 50}, MTU: 9000}}, 0, ""},
		{"rate=100M,ba.rate=10M,ab.loss=2%,queue=64KiB", []Path{{
			AB: Dir{Rate: 100e6, Loss: 0.02, QueueBytes: 64 << 10}, BA: Dir{Rate: 10e6, QueueBytes: 64 << 10}, MTU: 1500}}, 0, ""},
		{"rtt=20ms,rate=100M,queue=1bdp", []Path{{
			AB: Dir{Delay: 10 * ms, Rate: 100e6, QueueBytes: 250000}, BA: Dir{Delay: 10 * ms, Rate: 100e6, QueueBytes: 250000}, MTU: 1500}}, 0, ""},
		{"ge=1%:25%,seed=7,cc=reno", []Path{{
			AB: Dir{GE: &GE{P: 0.01, R: 0.25, LossBad: 1}}, BA: Dir{GE: &GE{P: 0.01, R: 0.25, LossBad: 1}}, MTU: 1500}}, 7, "reno"},
		{"rtt=50ms,cc=cubic", []Path{{AB: Dir{Delay: 25 * ms}, BA: Dir{Delay: 25 * ms}, MTU: 1500}}, 0, "cubic"},
		{"cc=bbr;rtt=2ms", []Path{{MTU: 1500}, {AB: Dir{Delay: ms}, BA: Dir{Delay: ms}, MTU: 1500}}, 0, "bbr"},
		{"rtt=20ms,rate=100M;rtt=30ms,rate=20M", []Path{
			{AB: Dir{Delay: 10 * ms, Rate: 100e6}, BA: Dir{Delay: 10 * ms, Rate: 100e6}, MTU: 1500},
			{AB: Dir{Delay: 15 * ms, Rate: 20e6}, BA: Dir{Delay: 15 * ms, Rate: 20e6}, MTU: 1500}}, 0, ""},
	}
	for _, c := range cases {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if s.Seed != c.seed || s.CC != c.cc || s.Source != c.in {
			t.Errorf("Parse(%q): seed %d cc %q source %q", c.in, s.Seed, s.CC, s.Source)
		}
		if len(s.Paths) != len(c.want) {
			t.Errorf("Parse(%q): %d paths, want %d", c.in, len(s.Paths), len(c.want))
			continue
		}
		for i := range c.want {
			if !samePath(s.Paths[i], c.want[i]) {
				t.Errorf("Parse(%q) path %d:\n got %+v\nwant %+v", c.in, i, s.Paths[i], c.want[i])
			}
		}
	}
}

func samePath(a, b Path) bool {
	sameDir := func(x, y Dir) bool {
		if (x.GE == nil) != (y.GE == nil) || x.GE != nil && *x.GE != *y.GE {
			return false
		}
		x.GE, y.GE = nil, nil
		return x == y
	}
	return a.MTU == b.MTU && sameDir(a.AB, b.AB) && sameDir(a.BA, b.BA)
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"rtt":                  "KEY=VALUE",
		"rtt=":                 "KEY=VALUE",
		"rtt=fast":             "duration",
		"rtt=-1ms":             "duration",
		"rtt=20ms,delay=5ms":   "rtt and delay",
		"loss=1":               "percentage",
		"loss=101%":            "0% to 100%",
		"loss=NaN%":            "0% to 100%",
		"rate=100":             "8k to 100G",
		"rate=1T":              "8k to 100G",
		"queue=100p":           "needs a rate",
		"rate=1M,queue=1.5p":   "whole number",
		"rate=1M,queue=lots":   "queue=lots",
		"ge=1%":                "P%:R%",
		"ge=1%:0%":             "never leaves",
		"jitter=5ms,delay=1ms": "jitter",
		"cd.delay=1ms":         "direction",
		"ab.rtt=1ms":           "belongs to the path",
		"speed=1":              "unknown key",
		"loss=1%,loss=2%":      "twice",
		"seed=1;seed=2":        "seed given twice",
		"cc=Reno!":             "congestion control",
		"mtu=100":              "576 to 9000",
		strings.Repeat("rtt=1ms;", 8) + "rtt=1ms": "paths",
	} {
		_, err := Parse(in)
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an ErrSpec saying %q", in, err, want)
		}
	}
}

// FuzzParse checks that Parse never panics, and that what it accepts is a
// spec the emulator can run.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "rtt=50ms,loss=1%,rate=100M", "ab.delay=1ms;ba.rate=1G,queue=1bdp",
		"ge=1%:20%:50%:0.1%,seed=3,cc=reno", "rate=10M,queue=64KB,jitter=0s,mtu=1280"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("Parse(%q): error %v is not an ErrSpec", s, err)
			}
			return
		}
		if len(spec.Paths) == 0 || len(spec.Paths) > MaxPaths {
			t.Fatalf("Parse(%q): %d paths", s, len(spec.Paths))
		}
		for _, p := range spec.Paths {
			for _, d := range []Dir{p.AB, p.BA} {
				if d.Delay < 0 || d.Delay > MaxDelay || d.Jitter > d.Delay || d.Loss < 0 || d.Loss > 1 ||
					d.Rate < 0 || d.Rate > MaxRate || d.QueueBytes < 0 || d.QueuePackets < 0 {
					t.Fatalf("Parse(%q): bad direction %+v", s, d)
				}
				m := newModel(d, p.RTT(), p.MTU, 1)
				m.admit(0, p.MTU)
				_ = d.String()
			}
		}
	})
}

package sctp

import (
	"fmt"

	"github.com/pion/sctp"
)

// Congestion control. An association's congestion controller is one of
// the fork's (SetCongestionControl): reno, the RFC 9260 window standing
// for several reno flows and tuned online (flows.go); cubic (RFC 9438);
// bbr (BBRv1, as Linux's tcp_bbr); bbr-cubic (bbr whose cwnd a CUBIC
// window bounds once a loss meets a standing queue). Config.CC picks one
// for associations with peers on other hosts; a peer on this host always
// gets reno (one flow unless Flows fixes the count), no pacing and no
// HyStart++ (nothing to share, nothing to queue).
//
// auto (the default) is bbr-cubic: through the emulated link at 100
// Mbit/s, 50 ms and 1% loss, 4 streams in bulk, it carries nearly what
// bbr does (0.84-0.89 of one TCP connection under the host's BBR, bbr
// 0.92-0.94), about twice what the tuned reno flows did, where cubic, as
// one CUBIC flow, carried a few Mbit/s; and on a clean path beside a CUBIC
// flow it takes 0.69 of that flow's rate, where bbr, as Linux's BBRv1,
// took nine tenths of the link (docs/congestion-control.md).
const (
	CCAuto  = "auto"
	CCReno  = sctp.CCReno
	CCCubic = sctp.CCCubic
	CCBBR   = sctp.CCBBR
	// CCBBRCubic is bbr bounded by a CUBIC window where a queue stands.
	CCBBRCubic = sctp.CCBBRCubic
)

// CCNames lists Config.CC's values.
var CCNames = []string{CCAuto, CCReno, CCCubic, CCBBR, CCBBRCubic}

// DefaultCC is what auto stands for.
const DefaultCC = CCBBRCubic

// ccFor is the controller of an association: reno to a peer on this host,
// and reno for a fixed flow count (flows are reno's); else Config.CC, auto
// standing for DefaultCC.
func (c *Config) ccFor(local bool) string {
	switch {
	case local:
		return CCReno
	case c.CC == "" || c.CC == CCAuto:
		if c.Flows > 0 {
			return CCReno
		}
		return DefaultCC
	}
	return c.CC
}

// validateCC checks Config.CC, and that a fixed flow count goes with reno.
func (c *Config) validateCC() error {
	switch c.CC {
	case "", CCAuto, CCReno:
		return nil
	case CCCubic, CCBBR, CCBBRCubic:
		if c.Flows > 0 {
			return fmt.Errorf("sctp: Flows %d is reno's (MulTCP); CC %s has none", c.Flows, c.CC)
		}
		return nil
	}
	return fmt.Errorf("sctp: CC %q: want auto, reno, cubic, bbr or bbr-cubic", c.CC)
}

// setCC gives pa its controller before its first DATA chunk.
func setCC(pa *sctp.Association, name string) error {
	if name == CCReno {
		return nil // pion's default
	}
	cc, err := sctp.NewCongestionControl(name)
	if err != nil {
		return err
	}
	return pa.SetCongestionControl(cc)
}

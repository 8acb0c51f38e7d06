package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseCount(t *testing.T) {
	for in, want := range map[string]int{"auto": 0, "1": 1, "16": 16} {
		if got, err := parseCount(in, 16); err != nil || got != want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "17", "-1", "", "Auto", "four"} {
		if _, err := parseCount(in, 16); err == nil {
			t.Errorf("parseCount(%q) accepted", in)
		}
	}
}

func TestParseGrid(t *testing.T) {
	g, err := parseGrid("1ms,50ms", "0,1%", "19456", "sctp,tcp,sctp")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.conds) != 4 || g.conds[3].RTT != 50*time.Millisecond || g.conds[3].Loss != 1 || len(g.settings) != 2 {
		t.Errorf("grid %+v: want 2 RTTs × 2 losses and sctp, tcp once each", g)
	}
	// Plain sctp is sctp@auto; the hosts' CCs are settings of their own.
	if g, err := parseGrid("50ms", "0", "1", "sctp,sctp@auto,tcp@bbr,tcp@cubic,tcp"); err != nil || len(g.settings) != 4 {
		t.Errorf("settings %v, %v: want sctp@auto, tcp@bbr, tcp@cubic and tcp", g.settings, err)
	}
	for _, tc := range []struct{ rtt, loss, size, settings, want string }{
		{"fast", "0", "1", "sctp", "--rtt"},
		{"1ms", "100", "1", "sctp", "--loss"},
		{"1ms", "0", "0", "sctp", "--size"},
		{"1ms", "0", "1", "udp", "udp"},
		{"1ms", "0", "1", "sctp@vegas", "vegas"},
		{"", "0", "1", "sctp", "need a value"},
	} {
		if _, err := parseGrid(tc.rtt, tc.loss, tc.size, tc.settings); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseGrid(%q, %q, %q, %q) = %v, want an error naming %s", tc.rtt, tc.loss, tc.size, tc.settings, err, tc.want)
		}
	}
}

package transport

import (
	"net"
	"testing"
)

func TestTLSMode(t *testing.T) {
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	lo6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 1}
	far := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 1}
	for _, tc := range []struct {
		mode                    TLSMode
		dialLo, dialFar         bool
		plainFromLo, plainFromF bool
	}{
		{TLSAuto, false, true, true, false},
		{TLSOn, true, true, false, false},
		{TLSOff, false, false, true, true},
	} {
		if got := tc.mode.Dial(lo); got != tc.dialLo {
			t.Errorf("%v: Dial(loopback) = %v", tc.mode, got)
		}
		if got := tc.mode.Dial(lo6); got != tc.dialLo {
			t.Errorf("%v: Dial(::1) = %v", tc.mode, got)
		}
		if got := tc.mode.Dial(far); got != tc.dialFar {
			t.Errorf("%v: Dial(10.1.2.3) = %v", tc.mode, got)
		}
		if got := tc.mode.AcceptPlain(lo); got != tc.plainFromLo {
			t.Errorf("%v: AcceptPlain(loopback) = %v", tc.mode, got)
		}
		if got := tc.mode.AcceptPlain(far); got != tc.plainFromF {
			t.Errorf("%v: AcceptPlain(10.1.2.3) = %v", tc.mode, got)
		}
		if m, err := ParseTLSMode(tc.mode.String()); err != nil || m != tc.mode {
			t.Errorf("ParseTLSMode(%q) = %v, %v", tc.mode.String(), m, err)
		}
	}
	if _, err := ParseTLSMode("maybe"); err == nil {
		t.Error(`ParseTLSMode("maybe") accepted`)
	}
}

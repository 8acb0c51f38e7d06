package testport

import (
	"net"
	"strconv"
	"testing"
)

// TestAddrOutsideEphemeralRange: the ports Addr picks are ones
// the kernel never gives an outgoing connection or a listener on port 0.
func TestAddrOutsideEphemeralRange(t *testing.T) {
	elo, ehi := ephemeralRange()
	if _, _, outside := fixedPorts(); !outside {
		t.Skipf("the ephemeral range %d-%d leaves no room outside it", elo, ehi)
	}
	for range 20 {
		_, p, err := net.SplitHostPort(Addr(t))
		if err != nil {
			t.Fatal(err)
		}
		if port, _ := strconv.Atoi(p); elo <= port && port <= ehi {
			t.Fatalf("freeAddr picked port %d, inside the ephemeral range %d-%d", port, elo, ehi)
		}
	}
}

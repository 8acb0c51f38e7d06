// Package testport picks ports for the processes a test starts and
// restarts: ports the kernel hands no other process meanwhile.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Addr returns a loopback address whose port nobody listens on now, over
// TCP or UDP, for a process the test starts on it (and perhaps starts
// again after killing it). The port is outside the kernel's ephemeral
// range (ip_local_port_range): a port from it, which a listener on port 0
// is given, can be taken in the meantime as the local port of any
// process's outgoing connection (every test of a run makes them), and the
// process's start or restart then fails with "address already in use".
func Addr(t testing.TB) string {
	t.Helper()
	lo, hi, _ := fixedPorts()
	for range 50 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(lo+rand.IntN(hi-lo+1)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", addr) // for the transports over UDP
		ln.Close()
		if err == nil {
			pc.Close()
			return addr
		}
	}
	t.Fatalf("no loopback port in %d-%d free for TCP and UDP", lo, hi)
	return ""
}

// fixedPorts is the range Addr draws from: below the ephemeral range
// when there is room (Linux's default is 32768-60999), else above it,
// and never below 20000, under which well-known services listen; outside
// says whether it is outside the ephemeral range (else it is all ports
// from 20000, and Addr takes its chance).
func fixedPorts() (lo, hi int, outside bool) {
	elo, ehi := ephemeralRange()
	if elo-1 >= 20000 {
		return 20000, elo - 1, true
	}
	if ehi+1 <= 65000 {
		return ehi + 1, 65535, true
	}
	return 20000, 65535, false
}

// ephemeralRange is the kernel's range of ports for outgoing connections
// and listeners on port 0; Linux's default when it cannot be read.
func ephemeralRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err == nil && 0 < lo && lo <= hi {
			return lo, hi
		}
	}
	return 32768, 60999
}

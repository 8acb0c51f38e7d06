package tcpconn

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTuned checks that both ends' sockets have Nagle off and unsent bytes
// bounded.
func TestTuned(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := DialConn(context.Background(), ln.Addr().String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var lowat, nodelay int
	var gerr error
	rc.Control(func(fd uintptr) {
		if lowat, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT); gerr == nil {
			nodelay, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY)
		}
	})
	if gerr != nil || lowat != NotSentLowat || nodelay == 0 {
		t.Fatalf("TCP_NOTSENT_LOWAT %d (want %d), TCP_NODELAY %d: %v", lowat, NotSentLowat, nodelay, gerr)
	}
}

// TestMPTCP dials with Multipath TCP asked for: to a listener that takes
// it the connection is MPTCP, tuned like any other; to one that does not,
// plain TCP. It skips on a kernel without MPTCP.
func TestMPTCP(t *testing.T) {
	if b, err := os.ReadFile("/proc/sys/net/mptcp/enabled"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Skipf("this kernel has no MPTCP, or it is off (net.mptcp.enabled): %v", err)
	}
	for _, listenMPTCP := range []bool{true, false} {
		var lc net.ListenConfig
		lc.SetMultipathTCP(listenMPTCP)
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := DialConn(context.Background(), ln.Addr().String(), Options{MPTCP: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("x")); err != nil { // MPTCP settles with the first data
			t.Fatal(err)
		}
		on, err := c.MultipathTCP()
		if err != nil || on != listenMPTCP {
			t.Errorf("listener MPTCP %v: dialed connection MultipathTCP() = %v, %v", listenMPTCP, on, err)
		}
		rc, _ := c.SyscallConn()
		var lowat int
		rc.Control(func(fd uintptr) { lowat, err = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT) })
		if err != nil || lowat != NotSentLowat {
			t.Errorf("listener MPTCP %v: TCP_NOTSENT_LOWAT %d (want %d): %v", listenMPTCP, lowat, NotSentLowat, err)
		}
	}
}

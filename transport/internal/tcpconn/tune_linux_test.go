package tcpconn

import (
	"context"
	"net"
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
	c, err := DialConn(context.Background(), ln.Addr().String())
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

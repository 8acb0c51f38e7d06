package tcpconn

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// setCC sets the congestion control of the TCP socket fd (TCP_CONGESTION).
// Any the kernel has may be set by a process with CAP_NET_ADMIN; others
// may set those net.ipv4.tcp_allowed_congestion_control lists.
func setCC(fd uintptr, name string) error {
	err := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	if err == nil {
		return nil
	}
	var hint string
	switch {
	case errors.Is(err, unix.ENOENT):
		hint = fmt.Sprintf(" (the kernel has %s; modprobe tcp_%s loads a module)", sysctlList("tcp_available_congestion_control"), name)
	case errors.Is(err, unix.EPERM):
		hint = fmt.Sprintf(" (it is not in net.ipv4.tcp_allowed_congestion_control, %s; root may pick any the kernel has)", sysctlList("tcp_allowed_congestion_control"))
	}
	return fmt.Errorf("tcpconn: TCP congestion control %q: %w%s", name, err, hint)
}

// CC returns the congestion control a TCP connection runs.
func CC(c syscall.Conn) (string, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		name, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return strings.TrimRight(name, "\x00"), gerr
}

// sysctlList reads a list under /proc/sys/net/ipv4, quoted.
func sysctlList(name string) string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/" + name)
	if err != nil {
		return "(unknown)"
	}
	return fmt.Sprintf("%q", strings.TrimSpace(string(b)))
}

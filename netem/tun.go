package netem

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openTUN creates the TUN device name (IP packets, no packet information
// header) in the calling thread's network namespace and returns its file,
// non-blocking so that Close interrupts a Read.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netem: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netem: tun %s: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netem: create tun %s: %w", name, err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netem: tun %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "tun:"+name), nil
}

package tcpconn

import (
	"net"

	"golang.org/x/sys/unix"
)

// NotSentLowat bounds the bytes a TCP socket holds that it has not sent
// yet (TCP_NOTSENT_LOWAT): beyond it a write blocks. Bytes in flight are
// not counted, so the window still grows to the path's bandwidth-delay
// product, but a message cannot sit in a send buffer the path will take
// seconds to drain, where it could be neither rescheduled nor cancelled.
const NotSentLowat = 128 << 10

// tune turns Nagle's algorithm off and bounds unsent bytes.
func tune(c *net.TCPConn) {
	c.SetNoDelay(true)
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, NotSentLowat)
		})
	}
}

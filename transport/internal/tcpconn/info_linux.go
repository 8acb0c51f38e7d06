package tcpconn

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/braidhq/braid/transport/internal/stripes"
	"golang.org/x/sys/unix"
)

// CanSample says whether Sample can read a connection's counters here.
const CanSample = true

// Sample reads c's TCP_INFO (c a *net.TCPConn, or TLS over one); false if
// it cannot.
func Sample(c net.Conn) (stripes.LinkSample, bool) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return stripes.LinkSample{}, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return stripes.LinkSample{}, false
	}
	var info *unix.TCPInfo
	if cerr := rc.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); cerr != nil || err != nil {
		return stripes.LinkSample{}, false
	}
	return stripes.LinkSample{
		RTT:        time.Duration(info.Rtt) * time.Microsecond,
		MinRTT:     time.Duration(info.Min_rtt) * time.Microsecond,
		BytesAcked: info.Bytes_acked,
		Unacked:    info.Unacked,
		Cwnd:       info.Snd_cwnd,
		NotSent:    info.Notsent_bytes,
	}, true
}

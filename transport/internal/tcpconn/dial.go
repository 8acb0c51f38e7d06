package tcpconn

import (
	"context"
	"fmt"
	"net"
	"time"
)

// DialConn opens a TCP connection, Multipath TCP if mptcp is set and the
// peer takes it, with Nagle's algorithm off and unsent bytes bounded
// (tune).
func DialConn(ctx context.Context, addr string, mptcp bool) (*net.TCPConn, error) {
	var d net.Dialer
	d.SetMultipathTCP(mptcp)
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	tune(tc)
	return tc, nil
}

// InterruptOn makes ctx's end interrupt c's pending reads and writes, and
// applies ctx's deadline to c. Call the returned func when done.
func InterruptOn(ctx context.Context, c net.Conn) (stop func() bool) {
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	return context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
}

// Settle ends a handshake phase on c: on failure it closes c and prefers
// ctx's error to the interrupted I/O's; on success it clears the deadline.
func Settle(ctx context.Context, c net.Conn, stop func() bool, err error) error {
	stop()
	if err != nil {
		c.Close()
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w (%v)", cerr, err)
		}
		return err
	}
	if err := ctx.Err(); err != nil {
		c.Close()
		return err
	}
	c.SetDeadline(time.Time{})
	return nil
}

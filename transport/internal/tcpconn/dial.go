package tcpconn

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"
)

// DialConn opens a TCP connection, Multipath TCP if sec.MPTCP is set and
// the peer takes it, under congestion control sec.CC if set, with Nagle's
// algorithm off and unsent bytes bounded (tune). sec's TLS settings are
// not used.
func DialConn(ctx context.Context, addr string, sec Options) (*net.TCPConn, error) {
	d := net.Dialer{Control: controlCC(sec.CC)}
	d.SetMultipathTCP(sec.MPTCP)
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	tune(tc)
	return tc, nil
}

// controlCC returns a dialer's or listener's Control that sets the socket's
// congestion control before it connects or listens (nil for the host's
// default). Accepted connections inherit the listener's.
func controlCC(name string) func(network, address string, c syscall.RawConn) error {
	if name == "" {
		return nil
	}
	return func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) { err = setCC(fd, name) }); cerr != nil {
			return cerr
		}
		return err
	}
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

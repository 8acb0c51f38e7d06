//go:build !linux

package tcpconn

import "net"

// tune turns Nagle's algorithm off.
func tune(c *net.TCPConn) { c.SetNoDelay(true) }

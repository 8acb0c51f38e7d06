//go:build !linux

package tcpconn

import (
	"errors"
	"syscall"
)

// setCC fails: picking a socket's congestion control is Linux's.
func setCC(uintptr, string) error {
	return errors.New("tcpconn: a TCP congestion control per connection needs Linux (TCP_CONGESTION)")
}

// CC fails: reading a socket's congestion control is Linux's.
func CC(syscall.Conn) (string, error) {
	return "", errors.New("tcpconn: TCP_CONGESTION needs Linux")
}

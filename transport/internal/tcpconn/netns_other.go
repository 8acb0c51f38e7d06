//go:build !linux

package tcpconn

// FollowNetns: network namespaces are Linux's; elsewhere goroutines open
// their sockets where their starter would, and follow does nothing.
func FollowNetns() (follow func() error, release func()) {
	return func() error { return nil }, func() {}
}

package transport

import (
	"fmt"
	"net"
)

// TLSMode says when a TCP transport (tcp, tcpn) protects its connections
// with TLS 1.3 keyed to the cluster secret (transport/internal/clustertls):
// mutual authentication and encryption in one step.
type TLSMode int

const (
	// TLSAuto, the zero value: between hosts. A dialer uses TLS unless the
	// peer is on loopback; a listener takes TLS from anyone and plaintext
	// only from loopback.
	TLSAuto TLSMode = iota
	// TLSOn: always, loopback too; a listener refuses plaintext.
	TLSOn
	// TLSOff: never dial with TLS (trusted networks); a listener still takes
	// TLS from a peer that offers it.
	TLSOff
)

func (m TLSMode) String() string {
	switch m {
	case TLSOn:
		return "on"
	case TLSOff:
		return "off"
	}
	return "auto"
}

// ParseTLSMode reads auto, on or off (also true and false).
func ParseTLSMode(s string) (TLSMode, error) {
	switch s {
	case "", "auto":
		return TLSAuto, nil
	case "on", "true":
		return TLSOn, nil
	case "off", "false":
		return TLSOff, nil
	}
	return TLSAuto, fmt.Errorf("data-plane TLS %q: want auto (between hosts), on or off", s)
}

// Dial reports whether a dialer in mode m uses TLS to remote.
func (m TLSMode) Dial(remote net.Addr) bool {
	switch m {
	case TLSOn:
		return true
	case TLSOff:
		return false
	}
	return !IsLoopback(remote)
}

// AcceptPlain reports whether a listener in mode m takes a plaintext
// connection from remote.
func (m TLSMode) AcceptPlain(remote net.Addr) bool {
	switch m {
	case TLSOn:
		return false
	case TLSOff:
		return true
	}
	return IsLoopback(remote)
}

// IsLoopback reports whether addr is a loopback address: packets to it
// never leave the host.
func IsLoopback(addr net.Addr) bool {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return false
		}
		ip = net.ParseIP(host)
	}
	return ip != nil && ip.IsLoopback()
}

// Package transports builds braid's data-plane transports by name, for the
// command line and the in-process cluster.
package transports

import (
	"fmt"
	"strings"

	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/transport/tcp"
	"github.com/braidhq/braid/transport/tcpn"
)

// Names lists the transports this binary has, default first.
var Names = []string{"tcpn", "tcp"}

// Default is what workers and the demo use unless told otherwise.
const Default = "tcpn"

// Options tune transports. The zero value means each one's defaults.
type Options struct{}

// New builds the named transport.
func New(name string, _ Options) (transport.Transport, error) {
	switch name {
	case "tcp":
		return tcp.New(tcp.Config{}), nil
	case "tcpn":
		return tcpn.New(tcpn.Config{}), nil
	}
	return nil, fmt.Errorf("unknown transport %q; available: %s", name, strings.Join(Names, ", "))
}

// All builds every transport, for a server that follows whatever its
// workers advertise.
func All(opts Options) (map[string]transport.Transport, error) {
	out := map[string]transport.Transport{}
	for _, name := range Names {
		t, err := New(name, opts)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

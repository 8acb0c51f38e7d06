//go:build !linux

package tcpconn

import (
	"net"

	"github.com/braidhq/braid/transport/internal/stripes"
)

// CanSample says whether Sample can read a connection's counters here.
const CanSample = false

// Sample reads c's TCP_INFO; elsewhere than on Linux it cannot.
func Sample(net.Conn) (stripes.LinkSample, bool) { return stripes.LinkSample{}, false }

package worker

import (
	"context"
	"errors"
	"net"

	"github.com/braidhq/braid/transport"
	"github.com/prometheus/client_golang/prometheus"
)

// newPeerRefusals is the counter of peers the data-plane listener refused
// or whose handshake failed, by reason (docs/metrics.md): the exact counts
// behind the listener's log lines, which come a line per source address
// per interval.
func newPeerRefusals() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "braid_worker_peers_refused_total",
		Help: "Peers the data-plane listener refused or dropped before accepting their association, by reason: auth (no cluster secret), " +
			"refused (the worker said no: busy, draining), protocol (malformed handshake), timeout (too slow, or evicted to make room), other."},
		[]string{"reason"})
	for _, r := range []string{"auth", "refused", "protocol", "timeout", "other"} {
		c.WithLabelValues(r) // every series from the start, at 0
	}
	return c
}

// refusalReason is the reason label of a refusal's error.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, transport.ErrAuth):
		return "auth"
	case errors.Is(err, transport.ErrRefused):
		return "refused"
	case errors.Is(err, transport.ErrProtocol):
		return "protocol"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), isTimeout(err):
		return "timeout"
	}
	return "other"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

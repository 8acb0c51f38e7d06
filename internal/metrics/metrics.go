// Package metrics holds what braid's server and worker share for their
// Prometheus metrics (docs/metrics.md lists them all): a registry per
// server or worker instance with the Go and process collectors, the
// /metrics handler, the latency buckets, and Traffic, which counts the
// messages and bytes an association carries per transport.
//
// Each instance has its own registry, never the client library's global
// one, so that several servers and workers in one process (tests, `braid
// demo`) do not collide. Metrics that describe state are read when
// scraped (prometheus.Collector, GaugeFunc); hot paths only add to
// atomic counters.
package metrics

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry holding the Go runtime and process
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg in the Prometheus text (or protobuf, when asked)
// exposition format. A collector's error is logged and the metrics it could
// gather are still served.
func Handler(reg *prometheus.Registry, log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      reg, // promhttp_metric_handler_errors_total
	})
}

// LatencyBuckets are the upper bounds, in seconds, of braid's unit latency
// histograms: half a millisecond to two minutes, about three per decade.
var LatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

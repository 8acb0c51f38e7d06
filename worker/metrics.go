package worker

import (
	"net"
	"net/http"
	"time"

	"github.com/braidhq/braid/internal/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// workerMetrics are the worker's Prometheus metrics (docs/metrics.md),
// served on Config.MetricsListen when it is set. Units run and handed back
// and liveness failures are counted where they happen; threads, queues,
// associations and streams are read at scrape time.
type workerMetrics struct {
	reg     *prometheus.Registry
	traffic *metrics.Traffic

	done, failed, refused prometheus.Counter
	handedBack            prometheus.Counter
	liveness              prometheus.Counter
	queued, compute       prometheus.Histogram
}

func newWorkerMetrics(w *Worker) *workerMetrics {
	m := &workerMetrics{reg: metrics.NewRegistry(), traffic: metrics.NewTraffic(w.cfg.Transport.Name())}
	run := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "braid_worker_units_run_total",
		Help: "Units this worker ran (or refused to run), by outcome: done, failed, refused (an operation it does not run)."},
		[]string{"outcome"})
	m.done, m.failed, m.refused = run.WithLabelValues("done"), run.WithLabelValues("failed"), run.WithLabelValues("refused")
	m.handedBack = prometheus.NewCounter(prometheus.CounterOpts{Name: "braid_worker_units_handed_back_total",
		Help: "Units handed back to their server unrun (the lease fell to 0: the worker is stopping, or other servers have its threads)."})
	m.liveness = prometheus.NewCounter(prometheus.CounterOpts{Name: "braid_worker_liveness_failures_total",
		Help: "Associations ended because their server was silent for the liveness bound."})
	m.queued = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "braid_worker_unit_queued_seconds",
		Help: "Time units waited in this worker's queue before a thread ran them.", Buckets: metrics.LatencyBuckets})
	m.compute = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "braid_worker_unit_compute_seconds",
		Help: "Time a thread spent running a unit.", Buckets: metrics.LatencyBuckets})
	gauge := func(name, help string, f func() float64) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.reg.MustRegister(m.traffic, run, m.handedBack, m.liveness, m.queued, m.compute, w.refusals,
		gauge("braid_worker_threads", "Processing threads this worker has.",
			func() float64 { return float64(w.cfg.Threads) }),
		gauge("braid_worker_threads_busy", "Threads running a unit now.",
			func() float64 { return float64(len(w.threads)) }),
		gauge("braid_worker_threads_leased", "Threads lent to servers now (docs/leases.md).",
			func() float64 { return float64(w.lender.leased()) }),
		gauge("braid_worker_units_queued", "Units received and waiting for a thread, over all associations.",
			func() float64 { return float64(w.sessionSum(func(s *session) int { return len(s.queue) })) }),
		gauge("braid_worker_associations", "Data-plane associations open with servers.",
			func() float64 { return float64(w.sessionSum(func(*session) int { return 1 })) }),
		gauge("braid_worker_streams", "Streams of the open associations.",
			func() float64 { return float64(w.sessionSum(func(s *session) int { return s.a.Streams() })) }),
	)
	return m
}

// observe counts a unit run and its latencies.
func (m *workerMetrics) observe(refused, failed bool, queued, compute time.Duration) {
	switch {
	case refused:
		m.refused.Inc()
		return
	case failed:
		m.failed.Inc()
	default:
		m.done.Inc()
	}
	m.queued.Observe(queued.Seconds())
	m.compute.Observe(compute.Seconds())
}

// sessionSum adds f over the open sessions.
func (w *Worker) sessionSum(f func(*session) int) int {
	w.sessMu.Lock()
	defer w.sessMu.Unlock()
	n := 0
	for s := range w.sessions {
		n += f(s)
	}
	return n
}

// MetricsAddr is the metrics listener's address; nil when
// Config.MetricsListen is empty.
func (w *Worker) MetricsAddr() net.Addr {
	if w.metricsLn == nil {
		return nil
	}
	return w.metricsLn.Addr()
}

// metricsHandler serves GET /metrics.
func (w *Worker) metricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(w.metrics.reg, w.log.With("component", "metrics")))
	return mux
}

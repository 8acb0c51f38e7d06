package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/internal/metrics"
	"github.com/braidhq/braid/transport"
	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics are the server's Prometheus metrics (docs/metrics.md).
// Events (units finished, requeued, liveness failures, latencies) are
// counted where they happen, by the dispatch loop; state (jobs, units,
// workers, associations, the store) is read at scrape time by
// stateCollector.
type serverMetrics struct {
	reg     *prometheus.Registry
	traffic *metrics.Traffic

	unitsSent        prometheus.Counter
	sendBatches      prometheus.Counter
	unitsDone        prometheus.Counter
	unitsFailed      prometheus.Counter
	requeuedDown     prometheus.Counter
	requeuedReturned prometheus.Counter
	livenessAssoc    prometheus.Counter
	livenessBeat     prometheus.Counter
	heartbeats       prometheus.Counter
	queued           prometheus.Histogram
	compute          prometheus.Histogram
	transit          prometheus.Histogram
}

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{reg: metrics.NewRegistry(), traffic: metrics.NewTraffic(slices.Sorted(maps.Keys(s.cfg.Transports))...)}
	m.unitsSent = prometheus.NewCounter(prometheus.CounterOpts{Name: "braid_units_sent_total",
		Help: "Copies of units sent to workers: first attempts, retries and speculative duplicates."})
	m.sendBatches = prometheus.NewCounter(prometheus.CounterOpts{Name: "braid_send_batches_total",
		Help: "Batches of messages (units, wants) a stream's sender handed to the data plane at once, each one write on the TCP transports: braid_units_sent_total over it is about the mean batch."})
	finished := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "braid_units_finished_total",
		Help: "Unit results accepted for their job, by outcome (done, failed)."}, []string{"outcome"})
	m.unitsDone, m.unitsFailed = finished.WithLabelValues("done"), finished.WithLabelValues("failed")
	requeued := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "braid_units_requeued_total",
		Help: "Units taken back from a worker to be placed again, by reason: worker_down (its association ended or it missed its heartbeats with the units in flight), handed_back (the worker returned them unrun)."},
		[]string{"reason"})
	m.requeuedDown, m.requeuedReturned = requeued.WithLabelValues("worker_down"), requeued.WithLabelValues("handed_back")
	liveness := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "braid_liveness_failures_total",
		Help: "Workers taken for dead, by check: association (silent on the data plane for the liveness bound), heartbeat (no HTTP heartbeat for the heartbeat timeout)."},
		[]string{"check"})
	m.livenessAssoc, m.livenessBeat = liveness.WithLabelValues("association"), liveness.WithLabelValues("heartbeat")
	m.heartbeats = prometheus.NewCounter(prometheus.CounterOpts{Name: "braid_heartbeats_total",
		Help: "HTTP heartbeats from workers, answered or not. A worker whose association is its sign of life (a linked worker, docs/operations.md) sends few."})
	hist := func(name, help string) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: metrics.LatencyBuckets})
	}
	m.queued = hist("braid_unit_queued_seconds", "Time accepted units waited in a worker's queue before a thread ran them, as the worker measured it.")
	m.compute = hist("braid_unit_compute_seconds", "Time a worker thread spent running accepted units, as the worker measured it.")
	m.transit = hist("braid_unit_transit_seconds", "Round trip of accepted units less the worker's queued and compute time: the send queue, both transfers and the result's wait for the dispatch loop.")
	m.reg.MustRegister(m.traffic, m.unitsSent, m.sendBatches, finished, requeued, liveness, m.heartbeats, m.queued, m.compute, m.transit,
		newStateCollector(s), s.limiter.refused, s.limiter.open)
	return m
}

// observeUnit records an accepted unit's latencies.
func (m *serverMetrics) observeUnit(f flight, r resultMsg) {
	queued, compute := r.res.Queued, r.res.Compute
	m.queued.Observe(queued.Seconds())
	m.compute.Observe(compute.Seconds())
	m.transit.Observe(max(r.returned.Sub(f.sent)-queued-compute, 0).Seconds())
}

// handleMetrics serves the server's metrics in the Prometheus formats.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	s.metricsHandler.ServeHTTP(w, r)
}

// stateCollector reads the server's state when scraped.
type stateCollector struct {
	s                                                       *Server
	jobs, units, workers, assocs, streams, objects, storeBy *prometheus.Desc
	workerDone, workerInFlight, workerLease                 *prometheus.Desc
	workerBytes, workerBudget, workerFlows                  *prometheus.Desc
	workerBytesOld                                          *prometheus.Desc // workerBytes' deprecated name
	held, bound                                             *prometheus.Desc
}

func newStateCollector(s *Server) *stateCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &stateCollector{s: s,
		jobs:           d("braid_jobs", "Jobs the server holds (running or retained), by state.", "state"),
		units:          d("braid_units", "Units of the jobs not yet finished (queued or running), by state.", "state"),
		workers:        d("braid_workers", "Registered workers, by state.", "state"),
		assocs:         d("braid_associations", "Open data-plane associations to workers, by transport.", "transport"),
		streams:        d("braid_streams", "Streams of the open associations, by transport.", "transport"),
		objects:        d("braid_store_objects", "Objects in the server's store."),
		storeBy:        d("braid_store_bytes", "Total size of the objects in the server's store."),
		workerDone:     d("braid_worker_units_completed_total", "Units a worker ran whose result was accepted, since it registered with this server.", "worker"),
		workerInFlight: d("braid_worker_units_in_flight", "Units sent to a worker and not yet answered.", "worker"),
		workerLease:    d("braid_worker_leased_streams", "Streams (threads) a worker lends this server now.", "worker"),
		workerBytes:    d("braid_worker_in_flight_input_bytes", "Input bytes of the units sent to a worker and not yet answered (where their size is known).", "worker"),
		workerBytesOld: d("braid_worker_input_bytes_in_flight", "Deprecated: braid_worker_in_flight_input_bytes, under its old name; removed in the next release.", "worker"),
		workerBudget:   d("braid_worker_byte_budget_bytes", "Input bytes a worker may have in flight: its measured work over the byte horizon, capped by what it says it can hold (0: no limit).", "worker"),
		held:           d("braid_units_held", "Units placed on workers but held in the server by the admission bound, to be sent as results come back (docs/scale.md)."),
		bound:          d("braid_units_out_bound", "The admission bound: units sent and not yet answered at most while the server's goroutines wait longer than --sched-target to run (0: no bound now)."),
		workerFlows:    d("braid_worker_sctp_flows", "Reno flows the congestion control of the server's userspace SCTP association to a worker stands for (--sctp-flows; tuned by default).", "worker"),
	}
}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.units, c.workers, c.assocs, c.streams, c.objects, c.storeBy,
		c.workerDone, c.workerInFlight, c.workerLease, c.workerBytes, c.workerBytesOld, c.workerBudget, c.workerFlows, c.held, c.bound} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c.collectJobs(gauge)
	objects, size := c.s.store.Usage()
	gauge(c.objects, float64(objects))
	gauge(c.storeBy, float64(size))
	c.collectWorkers(ch, gauge)
}

func (c *stateCollector) collectJobs(gauge func(*prometheus.Desc, float64, ...string)) {
	jobs := map[string]int{api.JobQueued: 0, api.JobRunning: 0, api.JobDone: 0, api.JobFailed: 0, api.JobCancelled: 0}
	var units api.Progress
	c.s.jobsMu.RLock()
	for _, j := range c.s.jobs {
		j.mu.Lock()
		jobs[j.state]++
		if j.state == api.JobQueued || j.state == api.JobRunning {
			p := j.progress
			units.Pending += p.Pending
			units.Running += p.Running
			units.Done += p.Done
			units.Failed += p.Failed
		}
		j.mu.Unlock()
	}
	c.s.jobsMu.RUnlock()
	for state, n := range jobs {
		gauge(c.jobs, float64(n), state)
	}
	// The core's Running is every unit in flight (api.Progress.Sent).
	gauge(c.units, float64(units.Pending), "pending")
	gauge(c.units, float64(units.Running), "in_flight")
	gauge(c.units, float64(units.Done), "done")
	gauge(c.units, float64(units.Failed), "failed")
}

// workerFigures is one worker's state, copied on the dispatch loop.
type workerFigures struct {
	name, state, transport string
	streams, lease         int
	done, inFlight         int
	bytes, budget          int64
	flows                  int // 0: not a userspace SCTP association
}

// collectWorkers copies the workers' state on the dispatch loop; a loop
// that does not answer within a second (a stopping server) leaves them out.
func (c *stateCollector) collectWorkers(ch chan<- prometheus.Metric, gauge func(*prometheus.Desc, float64, ...string)) {
	var figs []workerFigures
	var held, bound int
	d := c.s.disp
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := d.do(ctx, func() {
		held, bound = d.admit.live, d.admit.limit
		for name, w := range d.workers {
			f := workerFigures{name: name, state: w.state, done: w.unitsDone, inFlight: d.core.InFlight(name)}
			f.bytes, f.budget = d.core.Bytes(name)
			if w.assoc != nil {
				f.transport, f.streams, f.lease = w.transport, w.assoc.Streams(), w.lease
				f.flows = flowsOf(w.assoc)
			}
			figs = append(figs, f)
		}
	})
	if err != nil {
		return
	}
	if bound == noLimit {
		bound = 0
	}
	gauge(c.held, float64(held))
	gauge(c.bound, float64(bound))
	states := map[string]int{api.WorkerConnecting: 0, api.WorkerUp: 0, api.WorkerDown: 0}
	assocs, streams := map[string]int{}, map[string]int{}
	for name := range c.s.cfg.Transports {
		assocs[name], streams[name] = 0, 0
	}
	for _, f := range figs {
		states[f.state]++
		if f.transport != "" {
			assocs[f.transport]++
			streams[f.transport] += f.streams
		}
		ch <- prometheus.MustNewConstMetric(c.workerDone, prometheus.CounterValue, float64(f.done), f.name)
		gauge(c.workerInFlight, float64(f.inFlight), f.name)
		gauge(c.workerLease, float64(f.lease), f.name)
		gauge(c.workerBytes, float64(f.bytes), f.name)
		gauge(c.workerBytesOld, float64(f.bytes), f.name)
		gauge(c.workerBudget, float64(f.budget), f.name)
		if f.flows > 0 {
			gauge(c.workerFlows, float64(f.flows), f.name)
		}
	}
	for state, n := range states {
		gauge(c.workers, float64(n), state)
	}
	for name, n := range assocs {
		gauge(c.assocs, float64(n), name)
		gauge(c.streams, float64(streams[name]), name)
	}
}

// flowsOf is the flow count of a userspace SCTP association (see
// transport/sctp/flows.go), looking through wrappers that Unwrap; 0 for
// any other.
func flowsOf(a transport.Association) int {
	for a != nil {
		if f, ok := a.(interface{ Flows() int }); ok {
			return f.Flows()
		}
		u, ok := a.(interface{ Unwrap() transport.Association })
		if !ok {
			return 0
		}
		a = u.Unwrap()
	}
	return 0
}

package server

import (
	"math"
	"runtime/metrics"
	"time"
)

// schedLatency reads how long the process's goroutines waited to run: the
// runtime's histogram of the time from runnable to running
// (/sched/latencies:seconds), differenced between calls. Not safe for
// concurrent use: the dispatch loop owns it.
type schedLatency struct {
	sample []metrics.Sample
	last   []uint64 // the cumulative counts at the previous call
}

const schedLatencyMetric = "/sched/latencies:seconds"

func newSchedLatency() *schedLatency {
	return &schedLatency{sample: []metrics.Sample{{Name: schedLatencyMetric}}}
}

// quantile is the q-quantile (0 < q < 1) of the goroutines' waits since the
// previous call, the upper bound of the bucket it falls in, and how many
// waits there were; 0, 0 on the first call or when there was none.
func (l *schedLatency) quantile(q float64) (time.Duration, uint64) {
	metrics.Read(l.sample)
	if l.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0
	}
	h := l.sample[0].Value.Float64Histogram()
	first := l.last == nil
	if first {
		l.last = make([]uint64, len(h.Counts))
	}
	var total uint64
	delta := make([]uint64, len(h.Counts))
	for i, c := range h.Counts {
		delta[i] = c - l.last[i]
		total += delta[i]
		l.last[i] = c
	}
	if first || total == 0 {
		return 0, 0
	}
	return bucketQuantile(h.Buckets, delta, total, q), total
}

// bucketQuantile is the upper bound of the bucket holding the q-quantile
// of counts (buckets[i], buckets[i+1] bound counts[i]); an unbounded last
// bucket counts as its lower bound.
func bucketQuantile(buckets []float64, counts []uint64, total uint64, q float64) time.Duration {
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		if seen += c; seen >= rank {
			upper := buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return 0
}

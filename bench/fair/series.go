package fair

import (
	"time"

	"github.com/braidhq/braid/bench/tperf"
)

// Series is one receiver's record: the bytes it had received by each
// moment, in time order (from tperf.ReadSamples, the own flows' sampler or
// iperf3's intervals).
type Series []tperf.Sample

// Active is when the receiver got data: from the last sample before its
// count first rose to the first sample at its final count. ok is false
// for a receiver that got nothing.
func (s Series) Active() (from, to time.Time, ok bool) {
	if len(s) < 2 || s[len(s)-1].Bytes == s[0].Bytes {
		return time.Time{}, time.Time{}, false
	}
	i := 0
	for s[i+1].Bytes == s[0].Bytes {
		i++
	}
	j := len(s) - 1
	for s[j-1].Bytes == s[len(s)-1].Bytes {
		j--
	}
	return s[i].At, s[j].At, true
}

// BytesAt is the count at t, interpolated linearly between the samples
// around it (the first or last count outside them).
func (s Series) BytesAt(t time.Time) float64 {
	if len(s) == 0 {
		return 0
	}
	if !t.After(s[0].At) {
		return float64(s[0].Bytes)
	}
	for i := 1; i < len(s); i++ {
		if !t.After(s[i].At) {
			a, b := s[i-1], s[i]
			span := b.At.Sub(a.At)
			if span <= 0 {
				return float64(b.Bytes)
			}
			f := float64(t.Sub(a.At)) / float64(span)
			return float64(a.Bytes) + f*float64(b.Bytes-a.Bytes)
		}
	}
	return float64(s[len(s)-1].Bytes)
}

// Mbps is the rate between from and to, in Mbit/s (10⁶ bit/s).
func (s Series) Mbps(from, to time.Time) float64 {
	d := to.Sub(from).Seconds()
	if d <= 0 {
		return 0
	}
	return (s.BytesAt(to) - s.BytesAt(from)) * 8 / d / 1e6
}

// Bins are the rates of consecutive intervals of width w from start to
// end, in Mbit/s (a last partial interval is left out).
func (s Series) Bins(start, end time.Time, w time.Duration) []float64 {
	var out []float64
	for t := start; !t.Add(w).After(end); t = t.Add(w) {
		out = append(out, s.Mbps(t, t.Add(w)))
	}
	return out
}

// Shared is the interval in which every series was active, ok false if
// there is none (a receiver got nothing, or they never overlapped).
func Shared(ss []Series) (from, to time.Time, ok bool) {
	for i, s := range ss {
		f, t, active := s.Active()
		if !active {
			return time.Time{}, time.Time{}, false
		}
		if i == 0 || f.After(from) {
			from = f
		}
		if i == 0 || t.Before(to) {
			to = t
		}
	}
	return from, to, len(ss) > 0 && to.After(from)
}

// Jain is Jain's fairness index of the rates: (Σx)² / (n·Σx²), 1 when all
// are equal, 1/n when one takes everything; 0 for none or all zero.
func Jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

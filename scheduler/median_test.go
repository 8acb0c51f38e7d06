package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMedianExactThenClose: the running median is element n/2 of the
// sorted samples while it keeps them all, and within a bucket's width
// (1/64) of it after it counts them in buckets; its memory then stops
// growing.
func TestMedianExactThenClose(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var m median
	var all []int64
	for n := 1; n <= 3*maxExact; n++ {
		x := int64(r.ExpFloat64() * 5e6) // durations around 5 ms
		if n%1000 == 0 {
			x = 0
		}
		m.add(x)
		all = append(all, x)
		if n%997 != 0 && n != maxExact-1 && n != maxExact {
			continue
		}
		sorted := slices.Sorted(slices.Values(all))
		want := sorted[len(sorted)/2]
		got, ok := m.value()
		if !ok {
			t.Fatalf("%d samples: no median", n)
		}
		if n < maxExact && got != want {
			t.Fatalf("%d samples: median %d, want %d", n, got, want)
		}
		if d := got - want; n >= maxExact && (d > want/64+1 || -d > want/64+1) {
			t.Fatalf("%d samples: median %d, want %d within 1/64", n, got, want)
		}
	}
	if m.lo != nil || m.hi != nil || len(m.hist) != numBuckets {
		t.Errorf("past %d samples the median keeps %d samples", maxExact, m.lo.len()+m.hi.len())
	}
}

func TestBucketsOrdered(t *testing.T) {
	last := -1
	for _, x := range []int64{0, 1, 127, 128, 129, 200, 255, 256, 1000, 1 << 20, 1<<20 + 1, 1 << 40, 1<<62 + 5, 1<<63 - 1} {
		b := bucketOf(x)
		if b < last || b >= numBuckets {
			t.Fatalf("bucket of %d is %d, after %d", x, b, last)
		}
		if v, f := float64(bucketValue(b)), float64(x); x >= 128 && (v < f-f/64 || v > f+f/64) {
			t.Errorf("bucket %d of %d stands for %.0f", b, x, v)
		}
		last = b
	}
}

package netem

import (
	"math"
	"testing"
	"time"
)

// TestModelRate: back-to-back packets leave one serialization time apart,
// after the delay.
func TestModelRate(t *testing.T) {
	m := newModel(Dir{Delay: 10 * time.Millisecond, Rate: 12e6}, 20*time.Millisecond, 1500, 1)
	for i := range 5 {
		out, v := m.admit(0, 1500)
		want := int64(10*time.Millisecond) + int64(i+1)*int64(time.Millisecond) // 1500 B at 12 Mbit/s is 1 ms
		if v != pass || out != want {
			t.Fatalf("packet %d: %v at %d, want pass at %d", i, v, out, want)
		}
	}
}

// TestModelQueue: the queue holds its limit and drops the rest (tail
// drop), and drains at the rate.
func TestModelQueue(t *testing.T) {
	m := newModel(Dir{Rate: 12e6, QueuePackets: 10}, 0, 1500, 1)
	var passed, dropped int
	for range 25 {
		if _, v := m.admit(0, 1500); v == pass {
			passed++
		} else if v == droppedTail {
			dropped++
		}
	}
	if passed != 10 || dropped != 15 {
		t.Fatalf("passed %d dropped %d, want 10 and 15", passed, dropped)
	}
	// 3 ms later three packets left the queue: three more fit.
	passed = 0
	for range 5 {
		if _, v := m.admit(int64(3*time.Millisecond), 1500); v == pass {
			passed++
		}
	}
	if passed != 3 {
		t.Fatalf("after 3 ms %d passed, want 3", passed)
	}
}

// TestModelDefaultQueue: one BDP, at least 100 packets.
func TestModelDefaultQueue(t *testing.T) {
	d := Dir{Rate: 100e6}
	if got := d.DefaultQueue(20*time.Millisecond, 1500); got != 250000 {
		t.Errorf("100 Mbit/s × 20 ms: %d, want 250000", got)
	}
	if got := d.DefaultQueue(time.Millisecond, 1500); got != 150000 {
		t.Errorf("100 Mbit/s × 1 ms: %d, want 100 packets (150000)", got)
	}
}

// TestModelLoss: random and Gilbert–Elliott loss rates come out as set.
func TestModelLoss(t *testing.T) {
	const n = 200000
	for _, d := range []Dir{{Loss: 0.01}, {Loss: 0.2}, {GE: &GE{P: 0.01, R: 0.25, LossBad: 1}}, {GE: &GE{P: 0.05, R: 0.5, LossBad: 0.5, LossGood: 0.01}}} {
		m := newModel(d, 0, 1500, 42)
		lost, bursts, run := 0, 0, 0
		for range n {
			if _, v := m.admit(0, 100); v != pass {
				lost++
				if run == 0 {
					bursts++
				}
				run++
			} else {
				run = 0
			}
		}
		want := d.Loss
		if d.GE != nil {
			want = d.GE.MeanLoss()
		}
		got := float64(lost) / n
		if math.Abs(got-want) > 0.1*want {
			t.Errorf("%+v: loss %.4f, want %.4f ± 10%%", d, got, want)
		}
		if g := d.GE; g != nil && g.LossGood == 0 {
			if mean, want := float64(lost)/float64(bursts), 1/g.R; math.Abs(mean-want) > 0.1*want {
				t.Errorf("%+v: mean burst %.2f packets, want %.2f", d, mean, want)
			}
		}
	}
}

// TestModelJitterKeepsOrder: delivery times never go backwards and stay
// within delay ± jitter of the arrival, but for the hold-back.
func TestModelJitterKeepsOrder(t *testing.T) {
	d := Dir{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond}
	m := newModel(d, 0, 1500, 3)
	var last, sum int64
	const n = 10000
	for i := range int64(n) {
		now := i * int64(100*time.Microsecond)
		out, _ := m.admit(now, 100)
		if out < last {
			t.Fatalf("packet %d reordered: %d before %d", i, out, last)
		}
		if lat := out - now; lat < int64(d.Delay-d.Jitter) || lat > int64(d.Delay+d.Jitter) {
			t.Fatalf("packet %d: delay %v outside 10ms ± 2ms", i, time.Duration(lat))
		}
		last = out
		sum += out - now
	}
	if mean := time.Duration(sum / n); mean < d.Delay || mean > d.Delay+d.Jitter {
		t.Errorf("mean delay %v", mean)
	}
}

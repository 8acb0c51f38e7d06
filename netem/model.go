package netem

import (
	"math/rand/v2"
	"time"
)

// Times in the model are nanoseconds on the emulator's monotonic clock.

// verdict is what the model does with a packet.
type verdict int

const (
	pass        verdict = iota
	lostRandom          // random loss
	lostBurst           // Gilbert–Elliott loss
	droppedTail         // the bottleneck queue was full
)

// model is one direction's link: loss, then a rate-limited FIFO queue,
// then delay. It is pure (the caller passes the time) and owned by one
// goroutine.
type model struct {
	d       Dir
	rng     *rand.Rand
	geBad   bool
	limitB  int // queue limit in bytes (0: none)
	limitP  int // queue limit in packets (0: none)
	nsPerB  float64
	queue   []queued // packets admitted and not yet fully serialized, oldest first
	qbytes  int
	busy    int64 // when the bottleneck finishes the last queued packet
	lastOut int64 // delivery time of the last packet (no reordering)
}

type queued struct {
	done int64
	size int
}

func newModel(d Dir, rtt time.Duration, mtu int, seed uint64) *model {
	m := &model{d: d, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	if d.Rate > 0 {
		m.nsPerB = 8e9 / d.Rate
		switch {
		case d.QueuePackets > 0:
			m.limitP = d.QueuePackets
		case d.QueueBytes > 0:
			m.limitB = d.QueueBytes
		default:
			m.limitB = d.DefaultQueue(rtt, mtu)
		}
	}
	return m
}

// admit decides the fate of a size-byte packet arriving at now and, if it
// passes, when it leaves the far end of the link.
func (m *model) admit(now int64, size int) (int64, verdict) {
	if m.d.Loss > 0 && m.rng.Float64() < m.d.Loss {
		return 0, lostRandom
	}
	if g := m.d.GE; g != nil {
		if m.step(g) {
			return 0, lostBurst
		}
	}
	out := now
	if m.nsPerB > 0 {
		m.drain(now)
		if m.limitB > 0 && m.qbytes+size > m.limitB && len(m.queue) > 0 ||
			m.limitP > 0 && len(m.queue) >= m.limitP {
			return 0, droppedTail
		}
		start := max(now, m.busy)
		m.busy = start + int64(float64(size)*m.nsPerB)
		m.queue = append(m.queue, queued{m.busy, size})
		m.qbytes += size
		out = m.busy
	}
	out += int64(m.d.Delay)
	if j := m.d.Jitter; j > 0 {
		out += m.rng.Int64N(int64(2*j)+1) - int64(j)
	}
	out = max(out, m.lastOut)
	m.lastOut = out
	return out, pass
}

// step moves the Gilbert–Elliott chain one packet and says whether the
// packet is lost.
func (m *model) step(g *GE) bool {
	if m.geBad {
		if m.rng.Float64() < g.R {
			m.geBad = false
		}
	} else if m.rng.Float64() < g.P {
		m.geBad = true
	}
	loss := g.LossGood
	if m.geBad {
		loss = g.LossBad
	}
	return loss > 0 && m.rng.Float64() < loss
}

// drain forgets the packets the bottleneck finished sending by now.
func (m *model) drain(now int64) {
	i := 0
	for i < len(m.queue) && m.queue[i].done <= now {
		m.qbytes -= m.queue[i].size
		i++
	}
	if i == 0 {
		return
	}
	n := copy(m.queue, m.queue[i:])
	m.queue = m.queue[:n]
}

// queued reports the bytes and packets in the bottleneck queue.
func (m *model) backlog() (int, int) { return m.qbytes, len(m.queue) }

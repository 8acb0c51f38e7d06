package scale

import (
	"context"
	"slices"
	"sync"
	"time"
)

// sampleEvery is how often the server's heap and /proc figures are read
// while the job runs.
const sampleEvery = 250 * time.Millisecond

// sampler keeps the peaks of the server's heap in use, resident memory and
// open files while the job runs.
type sampler struct {
	sp *serverProc

	mu        sync.Mutex // guards the peaks
	heap      uint64
	rss       int64
	fds       int
	collected int
}

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m, herr := s.sp.heap(ctx, false)
		st, serr := s.sp.stats()
		s.mu.Lock()
		if herr == nil {
			s.heap = max(s.heap, m.HeapInuse)
			s.collected++
		}
		if serr == nil {
			s.rss, s.fds = max(s.rss, st.HWM), max(s.fds, st.FDs)
		}
		s.mu.Unlock()
	}
}

func (s *sampler) peakHeap() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heap
}

func (s *sampler) peakRSS() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rss
}

func (s *sampler) peakFDs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fds
}

func sortFloats(v []float64) { slices.Sort(v) }

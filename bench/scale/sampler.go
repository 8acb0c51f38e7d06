package scale

import (
	"context"
	"slices"
	"sync"
	"time"
)

// sampleEvery is how often the server's heap and /proc figures are read
// while the job runs; its open files are counted every fdsEvery samples
// (a second): listing 10,000 of them four times a second took a tenth of
// this process's CPU in a profiled run, CPU it shares with the server.
const (
	sampleEvery = 250 * time.Millisecond
	fdsEvery    = 4
)

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
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m, herr := s.sp.heap(ctx, false)
		st, serr := s.sp.statsOf(n%fdsEvery == 0)
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

// liveProbe reads the server's live heap, as its last collection found
// it, as the job passes a quarter, a half and three quarters of its
// units, and keeps the most: what the server holds for the running job,
// without the garbage the collector has not reached yet. It forces no
// collection: one forced on the server of 10,000 workers mid-job (as the
// probe did before) stalled its API, and the slowest polls of the run
// were those. Only if none has run since the one before the job (gc0: a
// small job) does it force one, or it would read the heap of before.
type liveProbe struct {
	e   *env
	gc0 uint32 // the server's count of collections before the job

	mu   sync.Mutex // guards most
	most uint64
}

func (p *liveProbe) run(ctx context.Context, job string) {
	marks := []float64{0.25, 0.5, 0.75}
	for len(marks) > 0 && ctx.Err() == nil {
		pr, err := p.e.progress(ctx, job)
		if err == nil && pr.Total > 0 && float64(pr.Done) >= marks[0]*float64(pr.Total) {
			marks = marks[1:]
			m, err := p.e.sp.heap(ctx, false)
			if err == nil && m.NumGC == p.gc0 {
				m, err = p.e.sp.heap(ctx, true)
			}
			if err == nil {
				p.mu.Lock()
				p.most = max(p.most, m.Live)
				p.mu.Unlock()
			}
			continue
		}
		if sleep(ctx, 200*time.Millisecond) != nil {
			return
		}
	}
}

func (p *liveProbe) peak() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.most
}

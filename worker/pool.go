package worker

import (
	"fmt"
	"sync"
)

// threadPool counts the worker's processing threads. Each association
// reserves one thread per stream for its whole life (a sub-pool) and gives
// them back when it ends; several servers share the one pool.
type threadPool struct {
	mu   sync.Mutex // guards free
	max  int
	free int
}

func newThreadPool(n int) *threadPool { return &threadPool{max: n, free: n} }

// reserve takes up to n threads; it fails when none is free.
func (p *threadPool) reserve(n int) (int, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == 0 {
		return 0, nil, fmt.Errorf("worker has no free processing threads (all %d are reserved by other associations)", p.max)
	}
	g := min(n, p.free)
	p.free -= g
	var once sync.Once
	return g, func() {
		once.Do(func() {
			p.mu.Lock()
			p.free += g
			p.mu.Unlock()
		})
	}, nil
}

func (p *threadPool) freeCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.free
}

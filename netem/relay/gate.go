package relay

import (
	"sync"
	"sync/atomic"
)

// gate is the relay's block switch. Copiers ask it before moving data.
type gate struct {
	blocked atomic.Bool // fast path for UDP, which drops rather than waits

	mu   sync.Mutex    // guards open
	open chan struct{} // closed while traffic may flow; a fresh one while blocked
}

// init opens the gate.
func (g *gate) init() {
	g.open = make(chan struct{})
	close(g.open)
}

func (g *gate) set(blocked bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.blocked.Load() == blocked {
		return
	}
	g.blocked.Store(blocked)
	if blocked {
		g.open = make(chan struct{})
	} else {
		close(g.open)
	}
}

// wait returns true once traffic may flow, or false if stop closes first.
func (g *gate) wait(stop <-chan struct{}) bool {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		return true
	case <-stop:
		return false
	}
}

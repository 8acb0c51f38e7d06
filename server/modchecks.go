package server

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"golang.org/x/sync/semaphore"
)

// Module checks compile WebAssembly, which takes memory in proportion to
// the module's largest function (userop.CompileCost), and registering an
// operation is open to every submit token. So the checks under way hold at
// most checkMemory between them, each holding its module's cost from
// before it reads the module (a bound from the module's size) to the end
// of its compile; a check that could never fit is refused (413), one that
// does not fit within checkWait is told to try again (429), and a token
// checks one module at a time (429 for a second).
const (
	checkMemory = 1 << 30
	checkWait   = 30 * time.Second
)

// moduleChecks is the server's budget for module checks.
type moduleChecks struct {
	mem *semaphore.Weighted

	mu   sync.Mutex // guards busy
	busy map[string]bool
}

func newModuleChecks() *moduleChecks {
	return &moduleChecks{mem: semaphore.NewWeighted(checkMemory), busy: map[string]bool{}}
}

// hold is one check's share of the budget.
type hold struct {
	c     *moduleChecks
	token string
	n     int64
}

// acquire takes cost bytes of the budget for a check by token, waiting up
// to checkWait (or ctx's end) for them.
func (c *moduleChecks) acquire(ctx context.Context, token string, cost int64) (*hold, error) {
	if cost > checkMemory {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: api.CodeTooLarge,
			msg: fmt.Sprintf("checking this module could take %d MiB, more than the %d MiB the server allows for it: its largest function is too big to compile here", cost>>20, checkMemory>>20)}
	}
	c.mu.Lock()
	if c.busy[token] {
		c.mu.Unlock()
		return nil, &apiError{status: http.StatusTooManyRequests, code: api.CodeUnavailable,
			msg: "this token is registering another operation, whose module the server is checking: one at a time; try again when it is done"}
	}
	c.busy[token] = true
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	if err := c.mem.Acquire(wctx, cost); err != nil {
		c.done(token)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &apiError{status: http.StatusTooManyRequests, code: api.CodeUnavailable,
			msg: fmt.Sprintf("the server is checking other modules and had no memory for this one within %v; try again in a little while", checkWait)}
	}
	return &hold{c: c, token: token, n: cost}, nil
}

// shrink gives back what the hold has over cost.
func (h *hold) shrink(cost int64) {
	if cost < h.n {
		h.c.mem.Release(h.n - cost)
		h.n = cost
	}
}

// release ends the check.
func (h *hold) release() {
	h.c.mem.Release(h.n)
	h.n = 0
	h.c.done(h.token)
}

func (c *moduleChecks) done(token string) {
	c.mu.Lock()
	delete(c.busy, token)
	c.mu.Unlock()
}

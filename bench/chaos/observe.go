package chaos

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
)

// observer polls the server's view of its workers every pollEvery and
// lets others wait for a condition on it. An unreachable server is an
// empty view.
type observer struct {
	c *client.Client

	mu      sync.Mutex // guards view and changed
	view    map[string]api.Worker
	changed chan struct{} // closed and replaced on every poll
}

const pollEvery = 50 * time.Millisecond

func newObserver(url, token string) *observer {
	c := client.New(url).WithToken(token).WithRetry(client.Retry{For: -1}).WithHTTPClient(&http.Client{Timeout: time.Second})
	return &observer{c: c, view: map[string]api.Worker{}, changed: make(chan struct{})}
}

// run polls until ctx ends.
func (o *observer) run(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		ws, _ := o.c.Workers(ctx)
		view := map[string]api.Worker{}
		for _, w := range ws {
			view[w.Info.Name] = w
		}
		o.mu.Lock()
		o.view = view
		close(o.changed)
		o.changed = make(chan struct{})
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitFor returns the time at which ok first held of the view, or false
// when ctx ended first.
func (o *observer) waitFor(ctx context.Context, ok func(view map[string]api.Worker) bool) (time.Time, bool) {
	for {
		o.mu.Lock()
		view, ch := o.view, o.changed
		o.mu.Unlock()
		if ok(view) {
			return time.Now(), true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

// busy reports whether worker name held units in the latest view.
func (o *observer) busy(name string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.view[name].InFlightUnits > 0
}

// up reports whether worker name is up in view.
func up(view map[string]api.Worker, name string) bool {
	return view[name].State == api.WorkerUp
}

// allUp reports whether every named worker is up in view.
func allUp(view map[string]api.Worker, names []string) bool {
	for _, n := range names {
		if !up(view, n) {
			return false
		}
	}
	return true
}

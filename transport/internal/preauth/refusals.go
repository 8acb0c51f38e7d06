package preauth

import (
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// Refusals aggregates a listener's lines about peers it refused or dropped
// before they authenticated, so that a flood of them costs a line per
// source address per interval, not a line per peer: the first refusal from
// a source in an interval is logged at once, as given; the others from that
// source in the interval as one line when the interval ends, with their
// count and the latest of them. Past MaxSources sources in one interval,
// the refusals of the rest are counted together. Exact counts are for
// metrics (transport.ListenConfig.Refused).
//
// Log must be set; the zero values of the others mean the defaults. A
// Refusals is safe for concurrent use; Close flushes it and stops its
// timer.
type Refusals struct {
	Every      time.Duration // default 10 s
	MaxSources int           // default 256
	Log        func(format string, args ...any)

	mu     sync.Mutex // guards the fields below
	held   map[netip.Addr]*heldLine
	other  heldLine // past MaxSources
	timer  *time.Timer
	start  time.Time
	closed bool
}

// heldLine is what a source's refusals left to report this interval.
type heldLine struct {
	n    int
	last string
}

func (r *Refusals) every() time.Duration {
	if r.Every <= 0 {
		return 10 * time.Second
	}
	return r.Every
}

// Note reports a refusal of a peer from src: format and args say what
// happened (they are logged as given for the first of an interval).
func (r *Refusals) Note(src netip.Addr, format string, args ...any) {
	maxSrc := r.MaxSources
	if maxSrc <= 0 {
		maxSrc = 256
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.Log(format, args...)
		return
	}
	if r.held == nil {
		r.held = make(map[netip.Addr]*heldLine)
		r.start = time.Now()
		r.timer = time.AfterFunc(r.every(), r.flush)
	}
	h, seen := r.held[src]
	switch {
	case !seen && len(r.held) < maxSrc:
		r.held[src] = &heldLine{}
		r.mu.Unlock()
		r.Log(format, args...)
		return
	case !seen:
		h = &r.other
	}
	h.n++
	h.last = fmt.Sprintf(format, args...)
	r.mu.Unlock()
}

// flush logs what the interval held back and starts a new one.
func (r *Refusals) flush() {
	r.mu.Lock()
	held, other, since := r.held, r.other, time.Since(r.start)
	r.held, r.other, r.timer = nil, heldLine{}, nil
	r.mu.Unlock()
	since = since.Round(100 * time.Millisecond)
	for src, h := range held {
		if h.n > 0 {
			r.Log("%d more like it from %s in the last %v; the latest: %s", h.n, src, since, h.last)
		}
	}
	if other.n > 0 {
		r.Log("%d more from other sources in the last %v; the latest: %s", other.n, since, other.last)
	}
}

// Close logs what is held back and stops the interval timer; later
// refusals are logged as they come.
func (r *Refusals) Close() {
	r.mu.Lock()
	r.closed = true
	t := r.timer
	r.mu.Unlock()
	if t != nil && t.Stop() {
		r.flush()
	}
}

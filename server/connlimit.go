package server

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/prometheus/client_golang/prometheus"
)

// Bounds on what the control API's connections hold before their requests
// are read (and so before a token is checked): a stranger who opens many
// connections, or sends huge or endless headers, can neither exhaust the
// server's file descriptors and memory nor starve the clients that have
// tokens.
const (
	// maxHeaderBytes bounds one request's header (Go's default is 1 MiB;
	// braid's headers are a token and a few short fields). A bigger one is
	// answered 431 and its connection closed.
	maxHeaderBytes = 32 << 10
	// headerBudget bounds the bytes all connections hold while they read a
	// request's header; a read beyond it ends its connection.
	headerBudget = 64 << 20
	// apiIdleTimeout ends a keep-alive connection idle this long.
	apiIdleTimeout = 30 * time.Second
	// DefaultMaxConnsPerSource is Config.MaxConnsPerSource's default.
	DefaultMaxConnsPerSource = 512
	// maxConnsCeiling is the largest default for Config.MaxConns.
	maxConnsCeiling = 65536
	// overflowConns is how many connections past a bound may be open at
	// once to be told 503; past those, a connection is closed at once.
	overflowConns = 64
)

// defaultMaxConns is Config.MaxConns's default: half the file descriptors
// the process may have (the other half is for the data plane, the store
// and the state), at most maxConnsCeiling, so that the API answers 503
// well before accept fails for want of descriptors.
func defaultMaxConns() int {
	n := openFileLimit()
	if n <= 0 {
		return 4096
	}
	return max(64, min(n/2, maxConnsCeiling))
}

// connLimiter is the control API's listener: it bounds connections in
// total and per source address, closing the oldest idle keep-alive
// connection (of the source, or of any) to make room, and else letting
// the newcomer in only to be answered 503 (overflowConns of them at a
// time; past those it is closed at once). It also bounds the bytes the
// connections hold while reading request headers (headerBudget). Its
// Track, Wrap and ConnContext hooks go on the http.Server.
type connLimiter struct {
	net.Listener
	maxTotal, maxPerSrc int
	refused             *prometheus.CounterVec // by reason
	open                prometheus.GaugeFunc

	mu     sync.Mutex // guards the fields below and every limitedConn's elem and counted
	total  int
	perSrc map[netip.Addr]int
	idle   list.List // of *limitedConn, idle keep-alive connections, oldest first
	over   int       // connections admitted only to be answered 503

	headerBytes atomic.Int64
}

func newConnLimiter(ln net.Listener, maxTotal, maxPerSrc int) *connLimiter {
	l := &connLimiter{Listener: ln, maxTotal: maxTotal, maxPerSrc: maxPerSrc, perSrc: map[netip.Addr]int{}}
	l.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "braid_api_connections_refused_total",
		Help: "Control API connections refused, by reason: per_source and total (over --max-conns-per-source or --max-conns: answered 503, or closed when even those answers are too many), " +
			"header_budget (closed: the connections reading request headers held too many bytes)."},
		[]string{"reason"})
	for _, r := range []string{"per_source", "total", "header_budget"} {
		l.refused.WithLabelValues(r)
	}
	l.open = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "braid_api_connections",
		Help: "Control API connections open now."}, func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return float64(l.total)
	})
	return l
}

// limitedConn is one of the limiter's connections.
type limitedConn struct {
	net.Conn
	l   *connLimiter
	src netip.Addr
	// over: admitted past a bound, to be answered 503 and closed.
	over bool
	// inHeader is set while the connection reads a request's header; held
	// is what it has read meanwhile, counted in l.headerBytes.
	inHeader atomic.Bool
	held     atomic.Int64
	elem     *list.Element // in l.idle while idle (guarded by l.mu)
	counted  bool          // counted in total and perSrc (guarded by l.mu)
}

// Accept returns the next connection admitted, or past a bound admitted
// to be answered 503; one past even those is closed here.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l, src: sourceOf(c.RemoteAddr())}
		lc.inHeader.Store(true)
		if l.admit(lc) {
			return lc, nil
		}
		_ = c.Close()
	}
}

// admit counts lc in, closing an idle connection to make room if it must;
// it reports false when lc is past the bounds and the 503 answers too.
func (l *connLimiter) admit(lc *limitedConn) bool {
	var victim *limitedConn
	reason := ""
	l.mu.Lock()
	switch {
	case l.perSrc[lc.src] >= l.maxPerSrc:
		if victim = l.oldestIdle(func(c *limitedConn) bool { return c.src == lc.src }); victim == nil {
			reason = "per_source"
		}
	case l.total >= l.maxTotal:
		if victim = l.oldestIdle(func(*limitedConn) bool { return true }); victim == nil {
			reason = "total"
		}
	}
	if victim != nil {
		l.uncountLocked(victim)
	}
	ok := true
	switch {
	case reason == "":
		l.total++
		l.perSrc[lc.src]++
		lc.counted = true
	case l.over < overflowConns:
		l.over++
		lc.over = true
	default:
		ok = false
	}
	l.mu.Unlock()
	if victim != nil {
		_ = victim.Conn.Close() // its server goroutine sees the error and ends
	}
	if reason != "" {
		l.refused.WithLabelValues(reason).Inc()
	}
	return ok
}

// oldestIdle returns the oldest idle connection that match accepts, or
// nil; l.mu is held.
func (l *connLimiter) oldestIdle(match func(*limitedConn) bool) *limitedConn {
	for e := l.idle.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*limitedConn); match(c) {
			return c
		}
	}
	return nil
}

// uncountLocked takes c out of the counts and the idle list; l.mu is
// held. It may be called again.
func (l *connLimiter) uncountLocked(c *limitedConn) {
	if c.elem != nil {
		l.idle.Remove(c.elem)
		c.elem = nil
	}
	if c.counted {
		c.counted = false
		l.total--
		if l.perSrc[c.src]--; l.perSrc[c.src] <= 0 {
			delete(l.perSrc, c.src)
		}
	}
}

// Read counts what a connection reads while it reads a request's header
// against headerBudget.
func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.inHeader.Load() {
		c.held.Add(int64(n))
		if c.l.headerBytes.Add(int64(n)) > headerBudget {
			c.releaseHeader()
			c.l.refused.WithLabelValues("header_budget").Inc()
			_ = c.Conn.Close()
			return 0, errHeaderBudget
		}
	}
	return n, err
}

var errHeaderBudget = errors.New("server: connections reading request headers hold too many bytes")

// releaseHeader gives back what c held while reading a header.
func (c *limitedConn) releaseHeader() {
	c.l.headerBytes.Add(-c.held.Swap(0))
}

// Track is the http.Server's ConnState hook: it keeps the idle list, the
// header accounting and the counts.
func (l *connLimiter) Track(nc net.Conn, state http.ConnState) {
	c := limitedOf(nc)
	if c == nil {
		return
	}
	switch state {
	case http.StateIdle:
		c.inHeader.Store(true) // the next request's header
		l.mu.Lock()
		if c.counted && c.elem == nil {
			c.elem = l.idle.PushBack(c)
		}
		l.mu.Unlock()
	case http.StateActive:
		l.mu.Lock()
		if c.elem != nil {
			l.idle.Remove(c.elem)
			c.elem = nil
		}
		l.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		c.inHeader.Store(false)
		c.releaseHeader()
		l.mu.Lock()
		l.uncountLocked(c)
		if c.over {
			c.over = false
			l.over--
		}
		l.mu.Unlock()
	}
}

// Wrap ends the header accounting of a request when its handler starts,
// and answers a connection admitted past a bound with 503.
func (l *connLimiter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(*limitedConn)
		if c != nil {
			c.inHeader.Store(false)
			c.releaseHeader()
			if c.over {
				w.Header().Set("Connection", "close")
				w.Header().Set("Retry-After", "1")
				writeError(w, &apiError{status: http.StatusServiceUnavailable, code: api.CodeUnavailable,
					msg: "the server has as many connections as it takes (from your address, or in all): try again shortly, and reuse connections"})
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext hook: it gives requests
// their limitedConn.
func (l *connLimiter) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c := limitedOf(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// limitedOf finds the limitedConn under nc (itself, or under TLS).
func limitedOf(nc net.Conn) *limitedConn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*limitedConn)
	return c
}

// sourceOf is the address a connection is counted under: its IP.
func sourceOf(a net.Addr) netip.Addr {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// Package worker is braid's computational node: it registers with servers,
// accepts data-plane associations from them, and runs the units that arrive
// on a pool of processing threads.
//
// Each association reserves one thread per stream for its life (the
// sub-pool of the paper, section III.B); units from all of its streams go to
// one queue that the sub-pool drains, and each result goes back on the
// stream its unit came in on.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/transport"
)

// Config configures a Worker. Zero values mean the documented defaults.
type Config struct {
	// Name identifies the worker to servers (default: hostname-pid).
	Name string
	// Servers are the base URLs of the servers to register with. Required.
	Servers []string
	// Threads is the number of processing threads (default: CPU count).
	Threads int
	// Transport serves the data plane. Required.
	Transport transport.Transport
	// Listen is the data-plane address (default 127.0.0.1:0).
	Listen string
	// InfoListen is the HTTP address serving GET /v1/info (default
	// 127.0.0.1:0).
	InfoListen string
	// Secret is the cluster secret. Required.
	Secret []byte
	// Ops limits the operations this worker runs (default: all built-in).
	Ops []string
	// Logger receives the worker's logs (default: discard).
	Logger *slog.Logger
	// HTTPClient talks to servers (default: one with a 10 s timeout).
	HTTPClient *http.Client
}

func (c *Config) validate() error {
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if c.Threads <= 0 {
		c.Threads = runtime.NumCPU()
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.InfoListen == "" {
		c.InfoListen = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if len(c.Ops) == 0 {
		for _, info := range ops.Catalogue() {
			c.Ops = append(c.Ops, info.Name)
		}
	}
	for _, name := range c.Ops {
		if _, ok := ops.Lookup(name); !ok {
			return fmt.Errorf("worker: unknown operation %q", name)
		}
	}
	switch {
	case len(c.Servers) == 0:
		return errors.New("worker: at least one --server is required")
	case len(c.Secret) == 0:
		return errors.New("worker: a cluster secret is required (--secret or $BRAID_SECRET)")
	case c.Transport == nil:
		return errors.New("worker: no transport")
	}
	return nil
}

// Worker is a braid worker. Create it with New, then call Run.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	pool   *threadPool
	ln     transport.Listener
	infoLn net.Listener
	wg     sync.WaitGroup

	figMu sync.Mutex // guards fig
	fig   figures
}

// New binds the data-plane and info listeners.
func New(cfg Config) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, log: cfg.Logger, pool: newThreadPool(cfg.Threads), fig: readFigures(".")}
	lc := transport.ListenConfig{Secret: cfg.Secret, Name: cfg.Name, RecStreams: cfg.Threads,
		MaxStreams: cfg.Threads, Admit: w.admit,
		Logf: func(format string, args ...any) { w.log.Warn(fmt.Sprintf(format, args...)) }}
	ln, err := cfg.Transport.Listen(cfg.Listen, lc)
	if err != nil {
		return nil, fmt.Errorf("worker: listen %s: %w", cfg.Listen, err)
	}
	infoLn, err := net.Listen("tcp", cfg.InfoListen)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	w.ln, w.infoLn = ln, infoLn
	return w, nil
}

// admit runs after a server authenticated: reserve one thread per stream.
func (w *Worker) admit(peer transport.PeerInfo, n int) (int, func(), error) {
	g, release, err := w.pool.reserve(n)
	if err == nil {
		w.log.Info("association admitted", "server", peer.Name, "streams", g, "free_threads", w.pool.freeCount())
	}
	return g, release, err
}

// Info returns the figures the worker advertises.
func (w *Worker) Info() api.WorkerInfo {
	w.figMu.Lock()
	f := w.fig
	w.figMu.Unlock()
	return api.WorkerInfo{Name: w.cfg.Name, Cores: f.cores, ClockMHz: f.clockMHz, RAMBytes: f.ramBytes,
		DiskFreeBytes: f.diskFree, MaxThreads: w.cfg.Threads, FreeThreads: w.pool.freeCount(),
		Ops: slices.Clone(w.cfg.Ops), InfoURL: "http://" + w.infoLn.Addr().String(),
		Endpoints: []api.Endpoint{{Transport: w.cfg.Transport.Name(), Addr: w.ln.Addr().String()}}}
}

// DataAddr is the data-plane listener's address.
func (w *Worker) DataAddr() net.Addr { return w.ln.Addr() }

// Run serves until ctx ends, deregisters, and waits for its goroutines.
func (w *Worker) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{Handler: w.infoHandler(), ReadHeaderTimeout: 5 * time.Second}
	w.wg.Go(func() { _ = hs.Serve(w.infoLn) })
	w.wg.Go(func() { w.acceptLoop(ctx) })
	for _, url := range w.cfg.Servers {
		w.wg.Go(func() { w.registerLoop(ctx, url) })
	}
	w.wg.Go(func() { w.watchFigures(ctx) })
	w.log.Info("worker running", "name", w.cfg.Name, "data", w.ln.Addr(), "transport", w.cfg.Transport.Name(), "threads", w.cfg.Threads)
	<-ctx.Done()
	w.ln.Close()
	_ = hs.Close()
	w.wg.Wait()
	return nil
}

func (w *Worker) acceptLoop(ctx context.Context) {
	for {
		a, err := w.ln.Accept(ctx)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, transport.ErrClosed) {
				w.log.Error("accept", "err", err)
			}
			return
		}
		w.wg.Go(func() { w.serveAssoc(ctx, a) })
	}
}

// watchFigures re-reads the machine's figures and re-announces on change.
func (w *Worker) watchFigures(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f := readFigures(".")
		w.figMu.Lock()
		changed := w.fig.changed(f)
		if changed {
			w.fig = f
		}
		w.figMu.Unlock()
		if changed {
			w.log.Info("figures changed; re-announcing")
			w.reannounce(ctx)
		}
	}
}

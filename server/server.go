// Package server is braid's server: the HTTP control plane, the object
// store, job splitting and assembly, and the dispatch of units to workers over
// data-plane associations.
//
// A Server is configured with a Config, started with Run and stopped by
// cancelling Run's context; Run returns after every goroutine it started has
// exited.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/transport"
)

// ErrServerClosed is returned by calls made after the server stopped.
var ErrServerClosed = errors.New("server: closed")

// errConflict marks requests that clash with the current state (409).
var errConflict = errors.New("conflict")

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Listen is the HTTP address (default 127.0.0.1:7070). Port 0 picks one;
	// Addr reports it.
	Listen string
	// DataDir holds objects and state (default ./braid-data).
	DataDir string
	// Secret is the cluster secret the data-plane handshake proves. Required.
	Secret []byte
	// Name identifies this server to workers (default "braid-server").
	Name string
	// Transports are the data-plane transports this server can dial, by
	// name. Required (at least one).
	Transports map[string]transport.Transport
	// MaxObjectSize bounds uploads (default 1 GiB).
	MaxObjectSize int64
	// UploadIdleTimeout ends an upload that sends no bytes for this long
	// (default 30s), so a stalled client cannot hold a temporary file and a
	// connection for ever.
	UploadIdleTimeout time.Duration
	// HeartbeatInterval is what workers are told to use (default 1s);
	// HeartbeatTimeout is when a silent worker loses its units (default 5s).
	HeartbeatInterval, HeartbeatTimeout time.Duration
	// Window is the scheduler's initial units in flight per stream.
	Window int
	// Liveness is how long a worker may stay silent on its association
	// before the server takes it for dead (default: the transport's, 3 s).
	Liveness time.Duration
	// Logger receives the server's logs (default: discard).
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7070"
	}
	if c.DataDir == "" {
		c.DataDir = "braid-data"
	}
	if c.Name == "" {
		c.Name = "braid-server"
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = time.Second
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 5 * c.HeartbeatInterval
	}
	if c.UploadIdleTimeout <= 0 {
		c.UploadIdleTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if len(c.Secret) == 0 {
		return errors.New("server: a cluster secret is required (--secret or $BRAID_SECRET)")
	}
	if len(c.Transports) == 0 {
		return errors.New("server: no data-plane transports configured")
	}
	return nil
}

// Server is a braid server. Create it with New, then call Run.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *store.Store
	db    *stateDB
	disp  *dispatcher
	ln    net.Listener

	ctx     context.Context // ends when Run's context ends
	stopped chan struct{}   // closed when the dispatch loop has exited
	wg      sync.WaitGroup  // every goroutine the server starts

	jobsMu sync.RWMutex // guards jobs
	jobs   map[string]*jobRun
}

// New opens the data directory and binds the HTTP listener.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// The state database's lock comes first: a second server on the same
	// directory must fail before it touches the store's uploads in progress.
	db, err := openState(filepath.Join(cfg.DataDir, "state.db"))
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(cfg.DataDir, "store"), cfg.MaxObjectSize)
	if err != nil {
		db.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		db.close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, store: st, db: db, ln: ln,
		stopped: make(chan struct{}), jobs: map[string]*jobRun{}}
	s.disp = newDispatcher(s)
	db.log = func(job string, err error) { s.log.Error("saving job state", "job", job, "err", err) }
	return s, nil
}

// Addr is the HTTP listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the base URL clients use.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Run serves until ctx ends, then shuts down and returns nil, or returns
// the error that stopped it.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx = ctx
	hs := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		s.disp.run(ctx)
	}()
	if err := s.resume(); err != nil {
		s.log.Error("resuming jobs", "err", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(s.ln) }()
	s.log.Info("server listening", "url", s.URL(), "data", s.cfg.DataDir)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	<-loopDone
	close(s.stopped) // handlers waiting on the loop give up now
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutCancel()
	_ = hs.Shutdown(shutCtx)
	s.wg.Wait()
	s.db.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) job(id string) *jobRun {
	s.jobsMu.RLock()
	defer s.jobsMu.RUnlock()
	return s.jobs[id]
}

// persist queues the job's record for writing; failures are logged (the
// job goes on). Only the dispatch loop calls it, so records are queued in
// the order the job's state changed.
func (s *Server) persist(j *jobRun) {
	s.db.saveJob(j.snapshot(true))
}

// Package server is braid's server: the HTTP control plane over the object
// store (package store), job splitting and assembly, and the dispatch of
// units to workers over data-plane associations.
//
// A Server is configured with a Config, started with Run and stopped by
// cancelling Run's context: it then drains (no new jobs, no new units, the
// results of units in flight stored, for up to Config.DrainTimeout), commits
// its state and closes its associations; Run returns after every goroutine
// it started has exited.
//
// # State
//
// Job state lives in DATA/state.db (package statedb, which describes the
// buckets). An id returned to a client names a job already on disk; a
// cancel is on disk before its 200; a job is done or failed for clients
// only once that state and its units' records are on disk. Writes are
// committed in groups by one writer (statedb's), so a burst of submits or
// unit results shares one fsync. Each accepted unit's result (its output
// object and statistics) is recorded, so a restarted server runs only the
// units without a stored result whose output still exists.
//
// Finished jobs are kept by age and count (Config.RetainFor, RetainJobs),
// then removed with their unit records. A collector deletes the objects the
// server wrote that no retained job references, past Config.GCGrace;
// objects clients uploaded stay until a client deletes them.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/internal/metrics"
	"github.com/braidhq/braid/server/statedb"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/store/local"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/version"
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
	// Secret is the cluster secret the data-plane handshake proves. Nil:
	// the data directory's, DataDir/secret, made at random on the first
	// start (New makes it only once it holds its port and directory).
	Secret []byte
	// Name identifies this server to workers (default "braid-server").
	Name string
	// Transports are the data-plane transports this server can dial, by
	// name. Required (at least one).
	Transports map[string]transport.Transport
	// Import opens an object outside the store, named by a URL such as
	// s3://BUCKET/KEY, for POST /v1/objects?from=URL, which stores it
	// without the client sending its bytes; it returns the bytes and their
	// size. nil: such uploads are refused.
	Import func(ctx context.Context, url string) (io.ReadCloser, int64, error)
	// MaxObjectSize bounds uploads (default 1 GiB).
	MaxObjectSize int64
	// OpenStore opens the object store, given the server's persistent ID
	// (a store several servers share keys its own records by it) and the
	// limits the server sets. nil: a local store under DataDir/store. The
	// server closes the store when it stops.
	OpenStore func(serverID string, cfg store.Config) (store.Store, error)
	// UploadIdleTimeout ends an upload that sends no bytes for this long
	// (default 30s), so a stalled client cannot hold a temporary file and a
	// connection for ever.
	UploadIdleTimeout time.Duration
	// HeartbeatInterval is what workers are told to use (default 1s);
	// HeartbeatTimeout is when a silent worker loses its units (default 5s).
	// With more than HeartbeatRate workers (default 800 a second) each
	// is told to beat less often, so that all of them together send about
	// HeartbeatRate heartbeats a second, and its timeout grows in
	// proportion (roster.go).
	HeartbeatInterval, HeartbeatTimeout time.Duration
	HeartbeatRate                       int
	// Window is the scheduler's initial units in flight per stream: 0 for
	// the scheduler's default (2), at most MaxWindow. Workers' feedback
	// grows it while their queues run dry, up to MaxWindow.
	Window int
	// ByteHorizon sizes each worker's byte budget: the input bytes it can
	// get through in this long at its measured rate, and never more than
	// the worker says it can hold (scheduler "Byte budgets"). 0: the
	// scheduler's default (1s); negative: no rate-based budget, only what
	// workers say they hold.
	ByteHorizon time.Duration
	// Liveness is how long a worker may stay silent on its association
	// before the server takes it for dead (default: the transport's, 3 s).
	Liveness time.Duration
	// SchedTarget is the wait of the server's goroutines to run (p99)
	// above which the server sends fewer units at once (admission.go): a
	// request to the API waits about as long. 0: DefaultSchedTarget;
	// negative: no bound.
	SchedTarget time.Duration
	// RetainFor is how long a finished job (done, failed or cancelled) is
	// kept, with its unit statistics (default 7 days; negative: no age
	// limit). RetainJobs is how many finished jobs are kept at most, the
	// oldest removed first (default 10,000; negative: no limit).
	RetainFor  time.Duration
	RetainJobs int
	// GCGrace is how long an object the server wrote (a unit output, a
	// result, a manifest) may stay unreferenced by any retained job before
	// the collector deletes it (default 10 minutes; negative: never
	// collect). Objects clients uploaded are never collected.
	GCGrace time.Duration
	// DrainTimeout bounds how long a stopping server waits for the results
	// of units in flight (default 10s; negative: do not wait).
	DrainTimeout time.Duration
	// ForgetWorkersAfter is how long a worker that is down (its heartbeats
	// timed out) stays listed before the server forgets it (default 1 h;
	// negative: never). A forgotten worker that comes back registers
	// again.
	ForgetWorkersAfter time.Duration
	// TLS, if set, makes the control plane HTTPS with its certificates
	// (internal/pki makes them for `braid server`); nil serves plain HTTP.
	TLS *tls.Config
	// Auth makes every endpoint but /healthz and the workers' registry
	// calls need a bearer token (auth.go); a server with no admin token
	// makes one at start and writes it to DataDir/admin.token. Off, anyone
	// who reaches the server may do anything: `braid server` turns it on
	// unless told --auth=false.
	Auth bool
	// MaxConns bounds the control API's open connections (default: half
	// the process's open-file limit, at most 65,536), and MaxConnsPerSource
	// those from one IP address (default 512; negative: only MaxConns).
	// Past a bound the oldest idle keep-alive connection is closed to make
	// room, and if none is idle the newcomer is answered 503 (connlimit.go).
	MaxConns, MaxConnsPerSource int
	// Logger receives the server's logs (default: discard).
	Logger *slog.Logger
}

// Defaults for the zero Config.
const (
	DefaultRetainFor          = 7 * 24 * time.Hour
	DefaultRetainJobs         = 10_000
	DefaultGCGrace            = 10 * time.Minute
	DefaultDrainTimeout       = 10 * time.Second
	DefaultForgetWorkersAfter = time.Hour
	DefaultHeartbeatRate      = 800
)

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
	if c.HeartbeatRate <= 0 {
		c.HeartbeatRate = DefaultHeartbeatRate
	}
	if c.SchedTarget == 0 {
		c.SchedTarget = DefaultSchedTarget
	}
	if c.UploadIdleTimeout <= 0 {
		c.UploadIdleTimeout = 30 * time.Second
	}
	if c.RetainFor == 0 {
		c.RetainFor = DefaultRetainFor
	}
	if c.RetainJobs == 0 {
		c.RetainJobs = DefaultRetainJobs
	}
	if c.GCGrace == 0 {
		c.GCGrace = DefaultGCGrace
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.ForgetWorkersAfter == 0 {
		c.ForgetWorkersAfter = DefaultForgetWorkersAfter
	}
	if c.MaxConns <= 0 {
		c.MaxConns = defaultMaxConns()
	}
	switch {
	case c.MaxConnsPerSource == 0:
		c.MaxConnsPerSource = DefaultMaxConnsPerSource
	case c.MaxConnsPerSource < 0:
		c.MaxConnsPerSource = c.MaxConns
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if len(c.Transports) == 0 {
		return errors.New("server: no data-plane transports configured")
	}
	return validateWindow(c.Window)
}

// Server is a braid server. Create it with New, then call Run.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store store.Store
	db    *statedb.DB
	disp  *dispatcher
	ln    net.Listener
	// limiter bounds the API's connections and header bytes (connlimit.go);
	// ln is it, or TLS over it.
	limiter *connLimiter

	// ctx ends when the server stops hard: after draining, or at once if
	// Run's context ends before it serves. Dials, stream reads and sends,
	// and long polls use it.
	ctx      context.Context
	stopped  chan struct{}  // closed when the dispatch loop has exited
	wg       sync.WaitGroup // every goroutine the server starts
	draining atomic.Bool    // set when Run's context ends: submits get 503

	// refsMu orders the references jobs make to objects against the
	// deletion of objects: a submit holds it shared from touching its
	// input until the job is visible, DELETE /v1/objects/{id} exclusively
	// from its check to the removal. Taken before jobsMu.
	refsMu sync.RWMutex

	jobsMu sync.RWMutex // guards jobs; taken before a jobRun's mu
	jobs   map[string]*jobRun

	retention retention

	metrics        *serverMetrics
	metricsHandler http.Handler // GET /metrics

	tokens *tokens // nil without Config.Auth
	// userOps is the catalogue of user operations; modChecks bounds the
	// memory their module checks take (modchecks.go).
	userOps   *userOps
	modChecks *moduleChecks
}

// New binds the HTTP listener and opens the data directory. What can fail
// without changing anything comes first (the port, then the directory's
// lock), so that a start that fails creates no secret and no admin token.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s, err := open(cfg, ln)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return s, nil
}

// open opens the data directory of a server listening on ln.
func open(cfg Config, ln net.Listener) (*Server, error) {
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	// The state database's lock comes first: a second server on the same
	// directory must fail before it touches the store's uploads in progress.
	db, err := statedb.Open(filepath.Join(cfg.DataDir, "state.db"), cfg.Logger.With("component", "state"))
	if err != nil {
		return nil, err
	}
	if len(cfg.Secret) == 0 {
		if cfg.Secret, err = dataDirSecret(cfg.DataDir); err != nil {
			db.Close()
			return nil, err
		}
	}
	st, err := cfg.openStore(db.ID())
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := migrate(db, st); err != nil {
		st.Close()
		db.Close()
		return nil, err
	}
	var toks *tokens
	if cfg.Auth {
		if toks, err = loadTokens(db); err == nil {
			var path string
			if path, err = toks.bootstrap(cfg.DataDir, time.Now()); path != "" {
				cfg.Logger.Info("this server had no admin token: it made one and wrote it to "+path+
					" (mode 0600); use it with: export BRAID_TOKEN=$(cat "+path+")", "file", path)
			}
		}
		if err != nil {
			st.Close()
			db.Close()
			return nil, fmt.Errorf("server: tokens: %w", err)
		}
	}
	userOps, err := loadUserOps(db)
	if err != nil {
		st.Close()
		db.Close()
		return nil, fmt.Errorf("server: user operations: %w", err)
	}
	limiter := newConnLimiter(ln, cfg.MaxConns, cfg.MaxConnsPerSource)
	ln = limiter
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, store: st, ctx: context.Background(), db: db, ln: ln, limiter: limiter, tokens: toks, userOps: userOps, modChecks: newModuleChecks(),
		stopped: make(chan struct{}), jobs: map[string]*jobRun{}}
	s.disp = newDispatcher(s)
	s.metrics = newServerMetrics(s)
	s.metricsHandler = metrics.Handler(s.metrics.reg, s.log.With("component", "metrics"))
	// On a shared store, the others' collectors must see this server's
	// references before it serves.
	if err := s.publishRefs(context.Background(), false); err != nil {
		st.Close() // New closes the listener
		db.Close()
		return nil, err
	}
	return s, nil
}

// openStore opens the configured object store, a local one by default.
func (c *Config) openStore(serverID string) (store.Store, error) {
	sc := store.Config{MaxSize: c.MaxObjectSize, TouchEvery: touchEvery(c.GCGrace)}
	if c.OpenStore != nil {
		return c.OpenStore(serverID, sc)
	}
	return local.Open(filepath.Join(c.DataDir, "store"), sc)
}

// touchEvery is how often the store refreshes an object written again and
// again (many units with the same output): a tenth of the collector's grace
// period, which leaves the collector's rule (store.Collection) nine tenths
// of it; a minute when nothing is collected.
func touchEvery(gcGrace time.Duration) time.Duration {
	if gcGrace < 0 {
		return time.Minute
	}
	return gcGrace / 10
}

// migrate brings an older data directory's state.db to this build's
// schema, marking the objects already stored as uploaded.
func migrate(db *statedb.DB, st store.Store) error {
	if db.Schema() == statedb.SchemaVersion {
		return nil
	}
	objs, err := st.List(context.Background())
	if err != nil {
		return fmt.Errorf("server: listing objects to migrate state.db: %w", err)
	}
	ids := make([]string, len(objs))
	for i, o := range objs {
		ids[i] = o.ID
	}
	return db.Migrate(ids)
}

// ID is the server's persistent identity: 32 hex digits made on the first
// start over its data directory and kept in state.db.
func (s *Server) ID() string { return s.db.ID() }

// Epoch counts the starts of this server over its data directory; New
// takes a new one, on disk, before the server serves. A worker that sees a
// higher epoch from the same ID knows the server restarted.
func (s *Server) Epoch() uint64 { return s.db.Epoch() }

// Addr is the HTTP listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the base URL clients use.
func (s *Server) URL() string {
	if s.cfg.TLS != nil {
		return "https://" + s.ln.Addr().String()
	}
	return "http://" + s.ln.Addr().String()
}

// WorkerBytes is the input bytes in flight to the named worker and its
// byte budget (0: none), as the scheduler counts them ("Byte budgets" in
// package scheduler); zeros for a worker that is not up, or while the
// server is not running.
func (s *Server) WorkerBytes(ctx context.Context, name string) (inFlight, budget int64) {
	_ = s.disp.do(ctx, func() { inFlight, budget = s.disp.core.Bytes(name) })
	return inFlight, budget
}

// Run serves until ctx ends, then stops (see the package comment) and
// returns nil, or returns the error that stopped it.
func (s *Server) Run(ctx context.Context) error {
	life, hardStop := context.WithCancel(context.Background())
	defer hardStop()
	s.ctx = life
	loopCtx, stopLoop := context.WithCancel(context.Background())
	defer stopLoop()
	hs := &http.Server{Handler: s.limiter.Wrap(s.routes()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: apiIdleTimeout,
		MaxHeaderBytes: maxHeaderBytes, ConnState: s.limiter.Track, ConnContext: s.limiter.ConnContext,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		s.disp.run(loopCtx)
	}()
	if err := s.resume(); err != nil {
		s.log.Error("resuming jobs", "err", err)
	}
	s.wg.Go(func() { s.janitor(life) })
	if _, ok := s.store.(store.Shared); ok {
		s.wg.Go(func() { s.refsPublisher(life) })
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(s.ln) }()
	s.log.Info("server listening", "url", s.URL(), "dashboard", s.URL()+"/ui/", "data", s.cfg.DataDir, "id", s.ID(), "epoch", s.Epoch(), "version", version.String())
	var err error
	select {
	case <-ctx.Done():
		s.log.Info("server stopping", "reason", context.Cause(ctx))
	case err = <-errc:
		s.log.Error("server stopping: HTTP listener failed", "err", err)
	}
	s.drain()
	stopLoop() // the loop closes the associations as it exits
	<-loopDone
	s.db.Flush()
	hardStop()
	close(s.stopped) // handlers waiting on the loop give up now
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutCancel()
	_ = hs.Shutdown(shutCtx)
	s.wg.Wait()
	finalCtx, finalCancel := context.WithTimeout(context.Background(), time.Minute)
	if err := s.publishRefs(finalCtx, true); err != nil {
		s.log.Warn("publishing the final references; other servers' collectors wait for this server to start again", "err", err)
	}
	finalCancel()
	s.db.Close()
	if err := s.store.Close(); err != nil {
		s.log.Warn("closing the object store", "err", err)
	}
	s.log.Info("server stopped")
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

// unitStats are the statistics of j's units from index from to index to
// (excluded): the accepted ones from state.db, and while the job runs
// those in flight (from the loop) and those accepted whose record is not
// yet on disk, both as running.
func (s *Server) unitStats(ctx context.Context, j *jobRun, from, to int) ([]api.UnitStat, error) {
	stats, err := s.db.UnitStats(j.id, from, to)
	if err != nil || len(stats) == 0 {
		return stats, err
	}
	j.mu.Lock()
	running := j.runningLocked()
	for i := range stats {
		if running && stats[i].State == "pending" && j.settled.has(from+i) {
			stats[i].State = "running" // its record is on its way to disk
		}
	}
	j.mu.Unlock()
	if !running {
		return stats, nil
	}
	var out []flight
	if err := s.disp.do(ctx, func() {
		for _, f := range s.disp.inflight {
			if f.job == j && f.index >= from && f.index < to {
				out = append(out, f)
			}
		}
	}); err != nil {
		return nil, err
	}
	for _, f := range out {
		u := &stats[f.index-from]
		if u.State != "pending" && (u.State != "running" || u.Sent != nil) {
			continue // done, or a copy already shown (speculation)
		}
		sent := f.sent
		u.State, u.Worker, u.Stream, u.Attempts, u.Sent = "running", f.worker, f.stream, f.attempt, &sent
	}
	return stats, nil
}

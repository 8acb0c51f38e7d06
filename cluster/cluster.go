// Package cluster starts a braid server and workers inside one process, on
// loopback sockets, for the demo, the benchmarks and integration tests. Every
// part is the real one: real HTTP, real data-plane associations, real files.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/internal/transports"
	"github.com/braidhq/braid/server"
	"github.com/braidhq/braid/store"
	"github.com/braidhq/braid/worker"
)

// WorkerSpec describes one worker.
type WorkerSpec struct {
	Name      string
	Threads   int
	Transport string // default transports.Default
	// Secret overrides the cluster's secret for this worker (to test a
	// worker that does not know it).
	Secret []byte
	// MetricsListen is the worker's Prometheus metrics address (empty:
	// none).
	MetricsListen string
	// NoWasm turns WebAssembly operations off on this worker; AllowExec
	// names the interpreters of the script operations it runs.
	NoWasm    bool
	AllowExec []string
	// HoldBytes is the worker's worker.Config.HoldBytes.
	HoldBytes int64
}

// DefaultSecret is a cluster's secret unless Config.Secret says otherwise.
var DefaultSecret = []byte("braid-cluster-secret")

// Config describes a cluster.
type Config struct {
	// DataDir is the server's data directory (default: a new temporary
	// directory, removed by Close).
	DataDir string
	Workers []WorkerSpec
	// Secret defaults to a fixed test secret.
	Secret []byte
	Logger *slog.Logger
	// Window is the scheduler's units in flight per stream (0: default).
	Window int
	// ByteHorizon is the server's (server.Config.ByteHorizon).
	ByteHorizon time.Duration
	// Transports tunes the transports.
	Transports transports.Options
	// MaxObjectSize bounds uploads (0: the server's default).
	MaxObjectSize int64
	// OpenStore opens the server's object store (server.Config.OpenStore;
	// nil: under DataDir).
	OpenStore func(serverID string, cfg store.Config) (store.Store, error)
	// UploadIdleTimeout ends stalled uploads (0: the server's default).
	UploadIdleTimeout time.Duration
	// RetainFor, RetainJobs, GCGrace and DrainTimeout are the server's
	// (0: its defaults).
	RetainFor    time.Duration
	RetainJobs   int
	GCGrace      time.Duration
	DrainTimeout time.Duration
	// Auth makes the server check tokens (server.Config.Auth); Client then
	// shows the first admin token, which the server wrote to its data
	// directory.
	Auth bool
	// TLS, if set, makes the control plane HTTPS with its certificates
	// (server.Config.TLS). Client and the workers then trust the last
	// certificate of its first chain, the authority internal/pki's
	// ServerCert puts there.
	TLS *tls.Config
}

// Cluster is a running server and its workers.
type Cluster struct {
	Server  *server.Server
	Client  *client.Client
	Workers []*worker.Worker
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the server's goroutine, and the workers'
	// stopWorkers stops the workers, which Close does first, so that they
	// deregister from a server still there; workers counts them.
	stopWorkers context.CancelFunc
	workers     sync.WaitGroup
	tmp         string
	errs        chan error
	trust       *tls.Config // a client's, trusting cfg.TLS's authority (nil: plain HTTP)
}

// Start starts the server and the workers, and returns once every worker's
// association is up.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	c := &Cluster{errs: make(chan error, len(cfg.Workers)+1)}
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "braid-cluster-*")
		if err != nil {
			return nil, err
		}
		cfg.DataDir, c.tmp = dir, dir
	}
	if cfg.Secret == nil {
		cfg.Secret = DefaultSecret
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ts, err := transports.All(cfg.Transports)
	if err != nil {
		c.cleanup()
		return nil, err
	}
	if cfg.TLS != nil {
		if c.trust, err = trusting(cfg.TLS); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	srv, err := server.New(server.Config{Listen: "127.0.0.1:0", DataDir: cfg.DataDir, Secret: cfg.Secret,
		Transports: ts, Window: cfg.Window, ByteHorizon: cfg.ByteHorizon, MaxObjectSize: cfg.MaxObjectSize,
		UploadIdleTimeout: cfg.UploadIdleTimeout, RetainFor: cfg.RetainFor, RetainJobs: cfg.RetainJobs,
		GCGrace: cfg.GCGrace, DrainTimeout: cfg.DrainTimeout, Auth: cfg.Auth, TLS: cfg.TLS, OpenStore: cfg.OpenStore,
		Logger: cfg.Logger.With("role", "server")})
	if err != nil {
		c.cleanup()
		return nil, err
	}
	cl := client.New(srv.URL()).WithToken("")
	cl = cl.WithTLS(c.trust)
	if cfg.Auth {
		tok, err := os.ReadFile(filepath.Join(cfg.DataDir, api.AdminTokenFile))
		if err != nil {
			stopped, stop := context.WithCancel(context.Background())
			stop()
			_ = srv.Run(stopped) // releases the listener and the data directory
			c.cleanup()
			return nil, fmt.Errorf("cluster: the admin token: %w", err)
		}
		cl = cl.WithToken(string(tok))
	}
	runCtx, cancel := context.WithCancel(context.Background())
	workersCtx, stopWorkers := context.WithCancel(runCtx)
	c.Server, c.Client, c.cancel, c.stopWorkers = srv, cl, cancel, stopWorkers
	c.goRun(func() error { return srv.Run(runCtx) })
	for i, ws := range cfg.Workers {
		if err := c.startWorker(workersCtx, i, ws, cfg); err != nil {
			c.Close()
			return nil, err
		}
	}
	good := 0
	for _, ws := range cfg.Workers {
		if ws.Secret == nil {
			good++
		}
	}
	if good == 0 {
		return c, nil
	}
	if err := c.WaitWorkers(ctx, good); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) startWorker(ctx context.Context, i int, ws WorkerSpec, cfg Config) error {
	if ws.Name == "" {
		ws.Name = fmt.Sprintf("w%d", i+1)
	}
	if ws.Transport == "" {
		ws.Transport = transports.Default
	}
	t, err := transports.New(ws.Transport, cfg.Transports)
	if err != nil {
		return err
	}
	secret := cfg.Secret
	if ws.Secret != nil {
		secret = ws.Secret
	}
	wc := worker.Config{Name: ws.Name, Servers: []string{c.Server.URL()}, Threads: ws.Threads,
		Transport: t, Secret: secret, MetricsListen: ws.MetricsListen, NoWasm: ws.NoWasm, AllowExec: ws.AllowExec, HoldBytes: ws.HoldBytes, Logger: cfg.Logger.With("role", "worker", "worker", ws.Name)}
	if c.trust != nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = c.trust.Clone() // net/http adds to its NextProtos
		wc.HTTPClient = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	w, err := worker.New(wc)
	if err != nil {
		return err
	}
	c.Workers = append(c.Workers, w)
	c.workers.Add(1)
	c.goRun(func() error {
		defer c.workers.Done()
		return w.Run(ctx)
	})
	return nil
}

func (c *Cluster) goRun(f func() error) {
	c.wg.Go(func() {
		if err := f(); err != nil {
			c.errs <- err
		}
	})
}

// WaitWorkers waits until n workers have their association up.
func (c *Cluster) WaitWorkers(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := WaitUp(ctx, c.Client, n, c.errs); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// WaitUp waits until the server of cl has at least n workers up, polling,
// until ctx ends or a part of the cluster reports on stopped (nil: none to
// watch).
func WaitUp(ctx context.Context, cl *client.Client, n int, stopped <-chan error) error {
	for {
		ws, err := cl.Workers(ctx)
		up := 0
		for _, w := range ws {
			if w.State == api.WorkerUp {
				up++
			}
		}
		if err == nil && up >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d workers up after waiting: %w (last error: %v)", up, n, ctx.Err(), err)
		case err := <-stopped:
			return fmt.Errorf("a part stopped: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close stops everything, waits for it, and removes a temporary data
// directory. The workers stop first, deregistering from the server, and
// then the server: a clean end logs no warning.
func (c *Cluster) Close() error {
	if c.stopWorkers != nil {
		c.stopWorkers()
		c.workers.Wait()
	}
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	close(c.errs)
	var errs []error
	for err := range c.errs {
		errs = append(errs, err)
	}
	c.cleanup()
	return errors.Join(errs...)
}

func (c *Cluster) cleanup() {
	if c.tmp != "" {
		os.RemoveAll(c.tmp)
	}
}

// trusting returns a client's TLS configuration that trusts the authority
// at the end of cfg's first certificate chain.
func trusting(cfg *tls.Config) (*tls.Config, error) {
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return nil, errors.New("cluster: TLS has no certificate")
	}
	chain := cfg.Certificates[0].Certificate
	ca, err := x509.ParseCertificate(chain[len(chain)-1])
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &tls.Config{RootCAs: pool}, nil
}

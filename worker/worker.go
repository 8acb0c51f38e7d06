// Package worker is braid's computational node: it registers with servers,
// accepts data-plane associations from them, and runs the units that arrive
// on a pool of processing threads.
//
// An association has one stream per worker thread. Units from all of its
// streams go to one queue, drained by the association's sub-pool (the
// paper, section III.B), and each result goes back on the stream its unit
// came in on. The threads are not reserved for an association's life but
// leased (docs/leases.md): each server says how many streams it could keep
// busy, and the worker lends its threads by that demand — a fair share each
// when several servers are busy, all of them to the only busy one — and
// tells each server how many of its streams it may use now.
//
// Run stops gracefully when its context ends: the worker takes every lease
// back, hands back the units no thread has started, lets the running ones
// finish (for up to Config.DrainTimeout), deregisters and closes its
// associations.
package worker

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/client"
	"github.com/braidhq/braid/ops"
	"github.com/braidhq/braid/transport"
	"github.com/braidhq/braid/userop"
	"github.com/braidhq/braid/version"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Worker. Zero values mean the documented defaults.
type Config struct {
	// Name identifies the worker to servers (default: hostname-pid).
	Name string
	// Servers are the base URLs of the servers to register with. Required.
	Servers []string
	// Threads is the number of processing threads, at most
	// transport.MaxStreams (default: CPU count, capped so).
	Threads int
	// Transport serves the data plane. Required.
	Transport transport.Transport
	// Listen is the data-plane address (default 127.0.0.1:0).
	Listen string
	// Advertise is the data-plane address announced to servers, when they
	// must reach the worker through another address than Listen (a NAT, a
	// relay). Default: the listener's address.
	Advertise string
	// Routes are announced with the address: other hosts at which
	// servers reach the data-plane listener on the same port, one per
	// further network path (api.Endpoint.Routes). The listener must be
	// bound to them too (Listen 0.0.0.0:PORT, say).
	Routes []string
	// InfoListen is the HTTP address serving GET /v1/info (default
	// 127.0.0.1:0).
	InfoListen string
	// MetricsListen is the HTTP address serving GET /metrics, the
	// worker's Prometheus metrics (docs/metrics.md). Empty: not served.
	MetricsListen string
	// Secret is the cluster secret. Required.
	Secret []byte
	// Ops limits the operations this worker runs (default: all built-in).
	Ops []string
	// Logger receives the worker's logs (default: discard).
	Logger *slog.Logger
	// HTTPClient talks to servers (default: one with a 10 s timeout).
	HTTPClient *http.Client
	// LeaseIdle is how long a server that stops asking for threads keeps
	// them against other servers' wants (default 1 s); while no other
	// server wants them it keeps them longer.
	LeaseIdle time.Duration
	// DrainTimeout bounds a graceful stop: units still running then are
	// abandoned (their servers run them elsewhere). Default 30 s.
	DrainTimeout time.Duration
	// MaxAssociations caps the associations open at once (default 64).
	MaxAssociations int
	// Liveness is how long a server may stay silent on an association
	// before the worker takes it for dead (default: the transport's, 3 s).
	Liveness time.Duration
	// NoWasm turns off user operations (docs/user-ops.md). By default the
	// worker runs them in its WebAssembly sandbox, fetching each module
	// from a server the first time a unit needs it.
	NoWasm bool
	// WasmCache is a directory that keeps user operations' compiled code
	// across restarts (default: none; code is compiled in memory).
	WasmCache string
	// WasmCacheMax bounds WasmCache, in bytes; the least recently loaded
	// modules' code goes first (default 1 GiB).
	WasmCacheMax int64
	// HoldBytes is how many bytes of unit inputs the worker can hold at
	// once; it tells each of its servers an equal share of it
	// (api.WorkerInfo.HoldBytes), so that a worker that cannot keep up is
	// not sent more than its memory holds (default: a quarter of the memory
	// the process could have, what /proc/meminfo or a container's limit
	// says is available plus what it uses, at least 64 MiB, looked at
	// again every 30 s and re-announced when it moves by a quarter;
	// negative: say nothing, and be bounded by unit windows alone).
	HoldBytes int64
	// AllowExec names the interpreters ("python3", "sh") whose script
	// operations this worker runs, found on PATH, or NAME=/PATH; none by
	// default. Each unit runs in a sandbox of its own (userop/sandbox: a
	// user id, namespaces, a cgroup and a filesystem of its own), which
	// needs Linux and root: New fails, saying why, where it cannot be had.
	AllowExec []string
	// ExecNetwork gives the worker's network to script units whose
	// operation asks for it (api.OpLimits.Network); others have none.
	ExecNetwork bool
}

func (c *Config) validate() error {
	if c.Name == "" {
		host, _ := os.Hostname()
		c.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if !api.ValidWorkerName(c.Name) {
		return fmt.Errorf("worker: name %q: want 1 to %d characters, no spaces, slashes or control characters", c.Name, api.MaxWorkerName)
	}
	if c.Threads < 0 || c.Threads > transport.MaxStreams {
		return fmt.Errorf("worker: %d threads: want 1 to %d (0 for one per CPU)", c.Threads, transport.MaxStreams)
	}
	if c.Threads == 0 {
		c.Threads = min(runtime.NumCPU(), transport.MaxStreams)
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
	if c.LeaseIdle <= 0 {
		c.LeaseIdle = time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.MaxAssociations <= 0 {
		c.MaxAssociations = 64
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
		return errors.New("worker: a cluster secret is required (Config.Secret: --secret-file or $BRAID_SECRET)")
	case c.Transport == nil:
		return errors.New("worker: no transport")
	}
	return nil
}

// Worker is a braid worker. Create it with New, then call Run.
type Worker struct {
	cfg     Config
	epoch   uint64 // this process's incarnation, in the handshake and WorkerInfo
	log     *slog.Logger
	debug   bool // log at debug level: a line per unit
	lender  *lender
	threads chan struct{} // one token per processing thread running a unit
	ln      transport.Listener
	infoLn  net.Listener
	wg      sync.WaitGroup

	metrics   *workerMetrics
	refusals  *prometheus.CounterVec // peers the listener refused, by reason (refusals.go)
	metricsLn net.Listener           // nil without Config.MetricsListen

	wasm *userop.Runtime // nil when it runs no user operation (NoWasm and no AllowExec)

	drainOnce    sync.Once
	drainStarted chan struct{} // closed when a graceful stop begins

	sessMu   sync.Mutex // guards sessions
	sessions map[*session]bool

	// Lock order: assocMu before sessMu.
	assocMu sync.Mutex        // guards assocs and newest
	assocs  int               // associations admitted and not yet ended
	newest  map[string]uint64 // per server id, the highest epoch admitted

	figMu sync.Mutex // guards fig
	fig   figures

	// announce has a channel per server (Config.Servers), of capacity 1:
	// reannounce signals each, and the server's register loop, while it
	// runs, sends the new figures.
	announce map[string]chan struct{}
	hold     int64 // what it can hold (Config.HoldBytes); guarded by figMu
}

// New binds the data-plane and info listeners.
func New(cfg Config) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, log: cfg.Logger, debug: cfg.Logger.Enabled(context.Background(), slog.LevelDebug), epoch: uint64(time.Now().UnixNano()), lender: newLender(cfg.Threads, cfg.LeaseIdle, time.Now),
		threads: make(chan struct{}, cfg.Threads), drainStarted: make(chan struct{}), sessions: map[*session]bool{},
		newest: map[string]uint64{}, fig: readFigures("."), announce: map[string]chan struct{}{}, hold: holdBytes(cfg.HoldBytes)}
	for _, url := range cfg.Servers {
		w.announce[url] = make(chan struct{}, 1)
	}
	w.refusals = newPeerRefusals()
	lc := transport.ListenConfig{Secret: cfg.Secret, Name: cfg.Name, ID: transport.HandshakeID(cfg.Name), Epoch: w.epoch,
		Liveness: cfg.Liveness, RecStreams: cfg.Threads,
		MaxStreams: cfg.Threads, Admit: w.admit,
		Logf:    func(format string, args ...any) { w.log.Warn(fmt.Sprintf(format, args...)) },
		Refused: func(_ net.Addr, err error) { w.refusals.WithLabelValues(refusalReason(err)).Inc() }}
	ln, err := cfg.Transport.Listen(cfg.Listen, lc)
	if err != nil {
		return nil, fmt.Errorf("worker: listen %s: %w", cfg.Listen, err)
	}
	infoLn, err := net.Listen("tcp", cfg.InfoListen)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	if cfg.MetricsListen != "" {
		if w.metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			ln.Close()
			infoLn.Close()
			return nil, fmt.Errorf("worker: metrics: %w", err)
		}
	}
	if !cfg.NoWasm || len(cfg.AllowExec) > 0 {
		w.wasm, err = newRuntime(cfg, w.fetchCode)
		if err != nil {
			ln.Close()
			infoLn.Close()
			if w.metricsLn != nil {
				w.metricsLn.Close()
			}
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	w.ln, w.infoLn = ln, infoLn
	w.metrics = newWorkerMetrics(w)
	return w, nil
}

// admit runs after a server authenticated. The association gets one stream
// per thread; the threads themselves are leased once it runs. A server
// keeps one association per worker, so a new one from the same server id
// supersedes the others at once: they are from its previous incarnation (a
// lower epoch: it restarted) or ones it has given up on. An association
// from an incarnation older than one already admitted is refused.
func (w *Worker) admit(peer transport.PeerInfo, n int) (int, func(), error) {
	if w.draining() {
		return 0, nil, errors.New("worker is shutting down")
	}
	w.assocMu.Lock()
	defer w.assocMu.Unlock()
	if w.assocs >= w.cfg.MaxAssociations {
		return 0, nil, fmt.Errorf("worker has %d associations open, its limit", w.assocs)
	}
	if peer.ID != "" {
		if newest, ok := w.newest[peer.ID]; ok && peer.Epoch < newest {
			return 0, nil, fmt.Errorf("server %s epoch %d is superseded: it restarted as epoch %d (or another server has a copy of its data directory, and its id)",
				peer.Name, peer.Epoch, newest)
		}
		w.newest[peer.ID] = peer.Epoch
		w.supersede(peer)
	}
	w.assocs++
	w.log.Info("association admitted", "server", peer.Name, "epoch", peer.Epoch, "streams", n)
	var once sync.Once
	return n, func() {
		once.Do(func() {
			w.assocMu.Lock()
			w.assocs--
			w.assocMu.Unlock()
		})
	}, nil
}

// draining reports whether a graceful stop has begun.
func (w *Worker) draining() bool {
	select {
	case <-w.drainStarted:
		return true
	default:
		return false
	}
}

// Info returns the figures the worker advertises.
func (w *Worker) Info() api.WorkerInfo {
	w.figMu.Lock()
	f, hold := w.fig, w.hold
	w.figMu.Unlock()
	addr := w.cfg.Advertise
	if addr == "" {
		addr = w.ln.Addr().String()
	}
	return api.WorkerInfo{Name: w.cfg.Name, Cores: f.cores, ClockMHz: f.clockMHz, RAMBytes: f.ramBytes,
		DiskFreeBytes: f.diskFree, MaxThreads: w.cfg.Threads, FreeThreads: w.cfg.Threads - len(w.threads),
		LeasedThreads: w.lender.leased(), Ops: slices.Clone(w.cfg.Ops), Runtimes: w.runtimes(), InfoURL: "http://" + w.infoLn.Addr().String(), Epoch: w.epoch, Version: version.String(),
		HoldBytes: hold / int64(max(len(w.cfg.Servers), 1)), // each server keeps to its share
		Endpoints: []api.Endpoint{{Transport: w.cfg.Transport.Name(), Addr: addr, Routes: slices.Clone(w.cfg.Routes)}}}
}

// runtimes are the kinds of user operation the worker runs.
func (w *Worker) runtimes() []string {
	var out []string
	if !w.cfg.NoWasm {
		out = append(out, api.OpWasm)
	}
	for _, name := range w.cfg.AllowExec {
		name, _, _ = strings.Cut(name, "=")
		out = append(out, "exec:"+name)
		if w.cfg.ExecNetwork {
			out = append(out, "exec-net:"+name)
		}
	}
	return out
}

// allowsExec reports whether the worker runs scripts of interpreter.
func (w *Worker) allowsExec(interpreter string) bool {
	return slices.ContainsFunc(w.cfg.AllowExec, func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return name == interpreter
	})
}

// newRuntime makes the runtime of user operations: WebAssembly unless
// cfg.NoWasm, and the interpreters cfg.AllowExec names, which must be on
// PATH, each unit of theirs in a sandbox of its own.
func newRuntime(cfg Config, fetch userop.Fetcher) (*userop.Runtime, error) {
	rc := userop.Config{CacheDir: cfg.WasmCache, MaxCache: cfg.WasmCacheMax, Fetch: fetch,
		Logger: cfg.Logger.With("component", "userop"), Exec: map[string]string{}, ExecNetwork: cfg.ExecNetwork}
	for _, entry := range cfg.AllowExec {
		path, err := interpreterPath(entry, true)
		if err != nil {
			return nil, fmt.Errorf("--allow-exec %s: %w", entry, err)
		}
		name, _, _ := strings.Cut(entry, "=")
		rc.Exec[name] = path
	}
	r, err := userop.NewRuntime(rc)
	if err != nil && len(cfg.AllowExec) > 0 {
		return nil, fmt.Errorf("--allow-exec: %w", err)
	}
	return r, err
}

// interpreterPath finds an interpreter: on PATH, or as AllowExec gives
// it, NAME=/ABSOLUTE/PATH. forOthers: scripts run as other users (each
// unit its own), who must be able to run it, as a shim in /root cannot be.
func interpreterPath(name string, forOthers bool) (string, error) {
	path := name
	if n, p, ok := strings.Cut(name, "="); ok {
		name, path = n, p
		if !filepath.IsAbs(path) {
			return "", fmt.Errorf("%s is not an absolute path", path)
		}
	}
	if !userop.ValidInterpreter(name) {
		return "", errors.New("want a program's name, e.g. python3, or NAME=/PATH")
	}
	path, err := exec.LookPath(path)
	if err != nil {
		return "", err
	}
	if forOthers && !othersCanRun(path) {
		return "", fmt.Errorf("%s cannot be run by other users, as scripts run; give one that can: --allow-exec %s=/usr/bin/%s", path, name, name)
	}
	return path, nil
}

// othersCanRun reports whether a user who owns none of path's directories
// can execute it.
func othersCanRun(path string) bool {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// codeTimeout bounds downloading a module from one server.
const codeTimeout = 2 * time.Minute

// fetchCode gets a user operation's module from the first server that
// has it (the runtime checks the digest, so any server will do).
func (w *Worker) fetchCode(ctx context.Context, digest [32]byte) ([]byte, error) {
	var errs []error
	hc := *w.cfg.HTTPClient
	hc.Timeout = codeTimeout // a module is up to 64 MiB, over whatever link
	for _, base := range w.cfg.Servers {
		c := client.New(base).WithHTTPClient(&hc).WithSecret(w.cfg.Secret).WithRetry(client.Retry{For: -1})
		code, err := c.Code(ctx, hex.EncodeToString(digest[:]))
		if err == nil {
			return code, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", base, err))
	}
	return nil, errors.Join(errs...)
}

// DataAddr is the data-plane listener's address.
func (w *Worker) DataAddr() net.Addr { return w.ln.Addr() }

// Run serves until ctx ends, then stops gracefully (see the package
// comment) and waits for its goroutines. It returns an error matching
// ErrRejected, and stops, if every server refused the worker for good (a
// wrong secret, invalid figures, a wrong URL, its name in use by a live
// worker); while some server still serves it, a refusal is logged once.
func (w *Worker) Run(ctx context.Context) error {
	life, stop := context.WithCancel(context.Background()) // the associations'
	defer stop()
	reg, unregister := context.WithCancel(context.Background()) // the registrations'
	defer unregister()
	var regs sync.WaitGroup
	hs := &http.Server{Handler: w.infoHandler(), ReadHeaderTimeout: 5 * time.Second}
	w.wg.Go(func() { _ = hs.Serve(w.infoLn) })
	ms := &http.Server{Handler: w.metricsHandler(), ReadHeaderTimeout: 5 * time.Second}
	if w.metricsLn != nil {
		w.wg.Go(func() { _ = ms.Serve(w.metricsLn) })
		w.log.Info("serving metrics", "url", "http://"+w.metricsLn.Addr().String()+"/metrics")
	}
	w.wg.Go(func() { w.acceptLoop(life) })
	rejected := make(chan *RejectedError, len(w.cfg.Servers))
	for _, url := range w.cfg.Servers {
		regs.Go(func() {
			if err := w.registerLoop(reg, url); err != nil {
				rejected <- err
			}
		})
	}
	w.wg.Go(func() { w.watchFigures(life) })
	w.log.Info("worker running", "name", w.cfg.Name, "data", w.ln.Addr(), "transport", w.cfg.Transport.Name(),
		"threads", w.cfg.Threads, "servers", len(w.cfg.Servers), "version", version.String())
	err := w.serve(ctx, rejected)
	if err != nil {
		w.log.Info("worker stopping", "reason", "every server rejected it")
	} else {
		w.log.Info("worker stopping", "reason", context.Cause(ctx))
	}
	w.drain()
	unregister()
	regs.Wait()
	w.ln.Close()
	stop()
	_ = hs.Close()
	_ = ms.Close()
	w.waitGoroutines()
	if w.wasm != nil {
		w.wasm.Close()
	}
	w.lender.stop()
	w.log.Info("worker stopped")
	return err
}

// serve waits until ctx ends (nil) or every server has rejected the
// worker (the rejections, joined).
func (w *Worker) serve(ctx context.Context, rejected <-chan *RejectedError) error {
	var errs []error
	for {
		select {
		case <-ctx.Done():
			return nil
		case r := <-rejected:
			errs = append(errs, r)
			left := len(w.cfg.Servers) - len(errs)
			w.log.Error("rejected by server", "server", r.Server, "reason", r.Reason(), "servers_left", left)
			if left == 0 {
				return errors.Join(errs...)
			}
		}
	}
}

// stopGrace is how long Run waits, after the drain, for its goroutines.
const stopGrace = 2 * time.Second

// waitGoroutines waits for the worker's goroutines, but not for long: one
// still inside an operation (which cannot be interrupted) after the drain
// timeout is abandoned, and ends with the operation.
func (w *Worker) waitGoroutines() {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopGrace):
		w.log.Warn("returning with units still running; their results are dropped", "running", len(w.threads))
	}
}

// drain begins a graceful stop: every lease goes back, units not started
// are handed back, and it waits (up to DrainTimeout) for the running ones.
func (w *Worker) drain() {
	w.drainOnce.Do(func() {
		close(w.drainStarted) // admit refuses from now on
		w.lender.drain()
	})
	w.log.Info("stopping: handing back queued units, finishing running ones", "running", len(w.threads), "timeout", w.cfg.DrainTimeout)
	deadline := time.Now().Add(w.cfg.DrainTimeout)
	for !w.settled() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !w.settled() {
		w.log.Warn("stopping with units still running; their servers will run them elsewhere", "running", len(w.threads))
	}
}

// settled reports whether every unit sent to the worker has been answered
// (run and sent back, or handed back) and each server says so, in a want
// that answers the lease that took its streams back.
func (w *Worker) settled() bool {
	w.sessMu.Lock()
	defer w.sessMu.Unlock()
	for s := range w.sessions {
		if s.busy.Load() > 0 || len(s.queue) > 0 || len(s.returns) > 0 || s.owes() {
			return false
		}
	}
	return true
}

// track adds or removes a session from those a stop waits for. A session
// whose server has since been admitted again (see admit) is aborted.
func (w *Worker) track(s *session, on bool) {
	if !on {
		w.sessMu.Lock()
		delete(w.sessions, s)
		w.sessMu.Unlock()
		return
	}
	peer := s.a.Peer()
	w.assocMu.Lock()
	stale := peer.ID != "" && peer.Epoch < w.newest[peer.ID]
	w.assocMu.Unlock()
	if stale {
		go s.a.Abort(errSuperseded)
	}
	w.sessMu.Lock()
	w.sessions[s] = true
	w.sessMu.Unlock()
}

// linkTo returns the Done channel of an open association with the server
// whose id is id, nil if there is none (or id is empty).
func (w *Worker) linkTo(id string) <-chan struct{} {
	if id == "" {
		return nil
	}
	w.sessMu.Lock()
	defer w.sessMu.Unlock()
	for s := range w.sessions {
		if s.a.Peer().ID == id && s.a.Err() == nil {
			return s.a.Done()
		}
	}
	return nil
}

// errSuperseded ends an association that a newer one from the same server
// replaced.
var errSuperseded = errors.New("worker: superseded by a newer association from the same server")

// supersede aborts the sessions of peer's server id: a new association
// from it replaces them. The caller holds assocMu.
func (w *Worker) supersede(peer transport.PeerInfo) {
	w.sessMu.Lock()
	defer w.sessMu.Unlock()
	for s := range w.sessions {
		if old := s.a.Peer(); old.ID == peer.ID {
			w.log.Info("association superseded by a newer one from the same server", "server", peer.Name,
				"old_epoch", old.Epoch, "new_epoch", peer.Epoch)
			go s.a.Abort(errSuperseded)
		}
	}
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

// watchFigures re-reads the machine's figures, and the memory it can hold
// units in (unless Config.HoldBytes fixes it), and re-announces on change.
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
		hold := holdBytes(w.cfg.HoldBytes)
		w.figMu.Lock()
		changed := w.fig.changed(f)
		if changed {
			w.fig = f
		}
		if w.cfg.HoldBytes == 0 && rehold(w.hold, hold) {
			w.hold, changed = hold, true
		}
		w.figMu.Unlock()
		if changed {
			w.log.Info("figures changed; re-announcing")
			w.reannounce()
		}
	}
}

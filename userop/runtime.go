package userop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/braidhq/braid/api"
	"github.com/braidhq/braid/userop/sandbox"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"golang.org/x/sync/singleflight"
)

// Fetcher gets a module's bytes by digest, from a server. The runtime
// checks the digest; a fetcher need not.
type Fetcher func(ctx context.Context, digest [32]byte) ([]byte, error)

// Config configures a Runtime. Zero values mean the defaults.
type Config struct {
	// CacheDir keeps compiled code across restarts, one directory per
	// module (default: none, compile in memory only).
	CacheDir string
	// MaxCache bounds the compiled code in CacheDir, in bytes; the least
	// recently used modules' code goes first (default 1 GiB).
	MaxCache int64
	// MaxLoaded bounds the modules compiled in memory (default 16).
	MaxLoaded int
	// Fetch gets the modules the runtime does not have. Required.
	Fetch Fetcher
	// Logger receives the runtime's logs (default: discard).
	Logger *slog.Logger
	// Exec maps the interpreters the worker's owner allows for script
	// operations (ABI exec) to their paths; nil refuses every script.
	// With Exec, each script unit runs in a sandbox of its own
	// (userop/sandbox: Linux, root), and NewRuntime fails, saying why,
	// where there can be none.
	Exec map[string]string
	// ExecNetwork gives the worker's network to the script units whose
	// operation asks for it; without it, those units fail, and every
	// other unit has only a loopback of its own.
	ExecNetwork bool
	// Sandbox configures the scripts' sandbox (default: its defaults, and
	// the install prefix of each interpreter outside the system's
	// directories added to what units see).
	Sandbox sandbox.Config
}

// Runtime runs user operations' units in wazero sandboxes: no filesystem,
// no network, no environment, WASI preview 1 only, memory and wall time
// and output bounded per unit. It downloads, checks and compiles a module
// the first time a unit needs it. Safe for concurrent use.
type Runtime struct {
	cfg Config
	log *slog.Logger
	sf  singleflight.Group

	mu      sync.Mutex // guards loaded, clock, closed, scripts
	loaded  map[moduleKey]*module
	scripts map[[32]byte][]byte
	clock   uint64
	closed  bool

	diskMu sync.Mutex // serialises pruning of CacheDir

	sandbox *sandbox.Sandbox // runs script units; nil without Config.Exec
}

// moduleKey names a compiled module: its code, and the memory limit of
// the wazero runtime it was compiled for.
type moduleKey struct {
	digest [32]byte
	pages  uint32
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("userop: runtime closed")

// NewRuntime returns a Runtime; with a CacheDir it creates it.
func NewRuntime(cfg Config) (*Runtime, error) {
	if cfg.Fetch == nil {
		return nil, errors.New("userop: no fetcher")
	}
	if cfg.MaxCache <= 0 {
		cfg.MaxCache = 1 << 30
	}
	if cfg.MaxLoaded <= 0 {
		cfg.MaxLoaded = 16
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("userop: code cache: %w", err)
		}
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger, loaded: map[moduleKey]*module{}, scripts: map[[32]byte][]byte{}}
	if len(cfg.Exec) > 0 {
		sc := cfg.Sandbox
		sc.ReadOnly = append(slices.Clone(sc.ReadOnly), interpreterRoots(cfg.Exec)...)
		if sc.Logger == nil {
			sc.Logger = cfg.Logger.With("component", "sandbox")
		}
		sb, err := sandbox.New(sc)
		if err != nil {
			return nil, fmt.Errorf("userop: scripts cannot be sandboxed here: %w", err)
		}
		r.sandbox = sb
	}
	return r, nil
}

// Close closes every compiled module; units running now fail.
func (r *Runtime) Close() error {
	r.mu.Lock()
	mods := r.loaded
	r.loaded, r.closed = nil, true
	r.mu.Unlock()
	for _, m := range mods {
		m.close()
	}
	return nil
}

// Run runs one unit of the operation op, whose module has digest, on
// input. Errors are the unit's failure, in words for the job's owner;
// the runtime and the worker's other units are unaffected.
func (r *Runtime) Run(ctx context.Context, op string, digest [32]byte, inv Invocation, input []byte) ([]byte, error) {
	if inv.ABI == api.ABIExec {
		return r.runExec(ctx, op, digest, inv, input)
	}
	m, err := r.module(ctx, digest, pages(inv.MemoryMiB))
	if err != nil {
		return nil, err
	}
	defer r.release(m)
	return m.run(ctx, op, inv, input)
}

// module returns the compiled module for key, loading it if need be, with
// a use counted (release ends it). Loading is shared by the units that
// want the module at once, and bounded by loadTimeout rather than by one
// of them: a caller whose unit ends stops waiting, the others do not.
func (r *Runtime) module(ctx context.Context, digest [32]byte, pages uint32) (*module, error) {
	key := moduleKey{digest, pages}
	if m, err := r.acquire(key); m != nil || err != nil {
		return m, err
	}
	ch := r.sf.DoChan(fmt.Sprintf("%x/%d", digest, pages), func() (any, error) {
		if m, _ := r.acquire(key); m != nil {
			r.release(m)
			return nil, nil
		}
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
		defer cancel()
		m, err := r.load(lctx, key)
		if err != nil {
			return nil, err
		}
		r.add(m)
		return nil, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m, err := r.acquire(key)
	if m == nil && err == nil {
		err = errors.New("userop: module evicted while loading; too many modules in use at once")
	}
	return m, err
}

// loadTimeout bounds fetching and compiling a module.
const loadTimeout = 5 * time.Minute

func (r *Runtime) acquire(key moduleKey) (*module, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	m := r.loaded[key]
	if m != nil {
		m.users++
		r.clock++
		m.used = r.clock
	}
	return m, nil
}

func (r *Runtime) release(m *module) {
	r.mu.Lock()
	m.users--
	closeIt := m.evicted && m.users == 0
	r.mu.Unlock()
	if closeIt {
		m.close()
	}
}

// add makes m loaded and evicts the least recently used modules beyond
// MaxLoaded; one in use is closed when its last unit ends.
func (r *Runtime) add(m *module) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		m.close()
		return
	}
	r.clock++
	m.used = r.clock
	r.loaded[m.key] = m
	var victims []*module
	for len(r.loaded) > r.cfg.MaxLoaded {
		var old *module
		for _, c := range r.loaded {
			if c != m && (old == nil || c.used < old.used) {
				old = c
			}
		}
		delete(r.loaded, old.key)
		old.evicted = true
		if old.users == 0 {
			victims = append(victims, old)
		}
	}
	r.mu.Unlock()
	for _, v := range victims {
		v.close()
	}
}

// load fetches, checks and compiles a module. With a CacheDir, wazero
// keeps the compiled code in the module's own directory there, so a
// restarted worker compiles nothing it compiled before.
func (r *Runtime) load(ctx context.Context, key moduleKey) (*module, error) {
	start := time.Now()
	code, err := r.cfg.Fetch(ctx, key.digest)
	if err != nil {
		return nil, fmt.Errorf("fetching the operation's module %x: %w", key.digest[:6], err)
	}
	if sha256.Sum256(code) != key.digest {
		return nil, fmt.Errorf("the module fetched for digest %x has another digest: not run", key.digest[:6])
	}
	code = boundTables(code)
	if err := vet(code); err != nil { // the server did; a worker trusts no server
		return nil, err
	}
	fetched := time.Since(start)
	cfg := wazero.NewRuntimeConfig().WithMemoryLimitPages(key.pages).WithCloseOnContextDone(true)
	dir := ""
	if r.cfg.CacheDir != "" {
		dir = filepath.Join(r.cfg.CacheDir, hex.EncodeToString(key.digest[:]))
		if cache, err := wazero.NewCompilationCacheWithDir(dir); err != nil {
			r.log.Warn("compiled-code cache unusable; compiling in memory", "dir", dir, "err", err)
			dir = ""
		} else {
			cfg = cfg.WithCompilationCache(cache)
		}
	}
	rt := wazero.NewRuntimeWithConfig(context.WithoutCancel(ctx), cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("userop: WASI: %w", err)
	}
	cm, err := rt.CompileModule(ctx, code)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("the operation's module does not compile: %w", err)
	}
	r.log.Info("user operation module ready", "digest", hex.EncodeToString(key.digest[:6]),
		"bytes", len(code), "fetch", fetched.Round(time.Millisecond), "compile", (time.Since(start) - fetched).Round(time.Millisecond))
	if dir != "" {
		now := time.Now()
		_ = os.Chtimes(dir, now, now) // its place in the LRU order
		r.prune(dir)
	}
	return &module{key: key, rt: rt, cm: cm}, nil
}

// prune removes the least recently used modules' directories from
// CacheDir until it holds at most MaxCache bytes; keep is spared.
func (r *Runtime) prune(keep string) {
	r.diskMu.Lock()
	defer r.diskMu.Unlock()
	entries, err := os.ReadDir(r.cfg.CacheDir)
	if err != nil {
		return
	}
	type dir struct {
		path string
		size int64
		mod  time.Time
	}
	var dirs []dir
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if !e.IsDir() || err != nil {
			continue
		}
		d := dir{path: filepath.Join(r.cfg.CacheDir, e.Name()), mod: info.ModTime()}
		_ = filepath.WalkDir(d.path, func(_ string, f os.DirEntry, err error) error {
			if err == nil && !f.IsDir() {
				if fi, err := f.Info(); err == nil {
					d.size += fi.Size()
				}
			}
			return nil
		})
		total += d.size
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b dir) int { return a.mod.Compare(b.mod) })
	for _, d := range dirs {
		if total <= r.cfg.MaxCache {
			return
		}
		if d.path == keep {
			continue
		}
		if err := os.RemoveAll(d.path); err == nil {
			total -= d.size
			r.log.Info("compiled code evicted from the cache", "dir", d.path, "bytes", d.size)
		}
	}
}
